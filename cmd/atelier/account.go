package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"atelier/capnweb"
)

// accountInfo is a gatekeeper account as connectAccount and listAccounts describe it.
type accountInfo struct {
	ID         string `json:"id"`
	Gatekeeper string `json:"gatekeeper"`
	Name       string `json:"name"` // the gatekeeper's name
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Created    any    `json:"created"`
	// State is "reconnect" for an OAuth account to connect again; OAuth marks OAuth accounts.
	State string `json:"state,omitempty"`
	OAuth bool   `json:"oauth,omitempty"`
	// AuthorizationURL and Pending: connectAccount started an OAuth authorization.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
	Pending          string `json:"pending,omitempty"`
}

func accountCommand() command {
	return command{
		name:    "account",
		summary: "connect, list and disconnect your accounts on gatekeepers",
		details: `An account is your access to one resource of an outside service through an installed
gatekeeper (see 'atelier gatekeeper list'): the resource's URL and the credentials the
gatekeeper's manifest asks for, sealed on the server and never shown again. Snippets
('atelier exec --gatekeeper'), agents ('atelier agent create --gatekeeper') and gadgets
('atelier gadget bind-gatekeeper') then use it; its changes wait for your approval
('atelier approvals').

Examples:
  atelier account connect board https://api.example.com/boards/team --credentials-file token.json
  atelier account list
  atelier account disconnect https://api.example.com/boards/team`,
		subcommands: []command{accountConnectCommand(), accountListCommand(), accountDisconnectCommand()},
	}
}

func accountConnectCommand() command {
	return command{
		name:    "connect",
		usage:   "[--server URL] [--credentials-file FILE|-] [--json] GATEKEEPER RESOURCE",
		summary: "connect an account on a gatekeeper",
		details: `Connects your account on GATEKEEPER (its name or ID, see 'atelier gatekeeper list') for
RESOURCE, the URL of what you grant it (it must match one of the manifest's resource patterns).

The credentials the manifest asks for come from --credentials-file FILE, a JSON object
{"NAME": "SECRET", ...} (- reads it from standard input), or, without the flag, are asked for
one by one on the terminal without echo. They are never taken as a flag value, which would
leave them in the shell's history and the process list.

A gatekeeper that connects by OAuth (its manifest declares oauth) takes no credentials: the
command prints the provider's URL, which you open in a browser to sign in and authorize, and
waits (at most 10 minutes; Ctrl-C stops waiting) until the server received the answer and the
account exists. Run it again for an account that 'atelier account list' shows as "reconnect".

Examples:
  atelier account connect board https://api.example.com/boards/team
  atelier account connect board https://api.example.com/boards/team --credentials-file token.json
  atelier account connect calendar https://calendar.example.com/calendars/team   # OAuth: open the URL it prints
  pass show board-token | jq -R '{token: .}' | atelier account connect board https://api.example.com/boards/team --credentials-file -`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			credsFile := fs.String("credentials-file", "", "a JSON object {NAME: SECRET} with the credentials (- for standard input)")
			asJSON := fs.Bool("json", false, "print the account as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gatekeeper (name or ID) and the resource's URL"}
				}
				var given map[string]string
				if *credsFile != "" {
					var err error
					if given, err = readCredentialsFile(ctx, *credsFile); err != nil {
						return err
					}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				gk, err := findGatekeeper(ctx, c, args[0])
				if err != nil {
					return err
				}
				if gk.OAuth {
					if given != nil {
						return fmt.Errorf("%s connects by OAuth and takes no credentials: run the command without --credentials-file and open the URL it prints", gk.Name)
					}
					return connectOAuth(ctx, c, gk, args[1], *asJSON)
				}
				creds := given
				if creds == nil {
					if creds, err = askGatekeeperCredentials(ctx, gk); err != nil {
						return err
					}
				}
				a, err := capnweb.AwaitAs[accountInfo](ctx, c.api.Call(ctx, "connectAccount", gk.ID, args[1], creds))
				if err != nil {
					if errorCode(err) == "INVALID_ARGUMENT" && strings.Contains(errorMessage(err), "credential") {
						return fmt.Errorf("%s\n%s asks for: %s; put them in the --credentials-file JSON object", errorMessage(err), gk.Name, credentialList(gk))
					}
					if errorCode(err) == "INVALID_ARGUMENT" {
						return fmt.Errorf("%s\nThe resource must match one of %s's patterns: %s", errorMessage(err), gk.Name, resourceList(gk))
					}
					return c.explain(err)
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, a)
				}
				fmt.Fprintf(stdio(ctx).out, "Connected %s %s as %s (%s).\nUse it with `atelier exec --gatekeeper %s=%s FILE`.\n",
					a.Name, a.Resource, a.ID, a.Kind, a.Name, a.ID)
				return nil
			}
		},
	}
}

// oauthWait bounds how long `account connect` waits for an OAuth authorization (the
// server's pending authorizations live as long).
const oauthWait = 10 * time.Minute

// connectOAuth starts the OAuth authorization of an account on gk for resource, prints the
// provider's URL and waits until the account exists (or was reconnected).
func connectOAuth(ctx context.Context, c *client, gk gatekeeperInfo, resource string, asJSON bool) error {
	before, err := listAccounts(ctx, c)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, a := range before {
		if a.State == "" {
			known[a.ID] = true
		}
	}
	p, err := capnweb.AwaitAs[accountInfo](ctx, c.api.Call(ctx, "connectAccount", gk.ID, resource))
	if err != nil {
		if errorCode(err) == "INVALID_ARGUMENT" {
			return fmt.Errorf("%s\nThe resource must match one of %s's patterns: %s", errorMessage(err), gk.Name, resourceList(gk))
		}
		return c.explain(err)
	}
	out := stdio(ctx)
	fmt.Fprintf(out.err, "Open this URL in your browser to sign in to %s and authorize Atelier:\n\n  %s\n\nWaiting for the authorization (at most %s; Ctrl-C stops waiting)...\n", gk.Name, p.AuthorizationURL, oauthWait)
	ctx, cancel := context.WithTimeout(ctx, oauthWait)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the authorization was not completed in time (%v); run the command again to get a new URL", ctx.Err())
		case <-tick.C:
		}
		accts, err := listAccounts(ctx, c)
		if err != nil {
			return err
		}
		for _, a := range accts {
			if a.Gatekeeper == gk.ID && a.Resource == resource && a.State == "" && !known[a.ID] {
				if asJSON {
					return printJSON(out.out, a)
				}
				fmt.Fprintf(out.out, "Connected %s %s as %s (%s).\nUse it with `atelier exec --gatekeeper %s=%s FILE`.\n", a.Name, a.Resource, a.ID, a.Kind, a.Name, a.ID)
				return nil
			}
		}
	}
}

// readCredentialsFile reads the JSON object {name: secret} of --credentials-file (- for
// standard input).
func readCredentialsFile(ctx context.Context, name string) (map[string]string, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdio(ctx).in)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read the credentials: %w", err)
	}
	var creds map[string]string
	if err := json.Unmarshal(data, &creds); err != nil || creds == nil {
		return nil, fmt.Errorf("the credentials file %s is not a JSON object of strings like {\"token\": \"SECRET\"}", name)
	}
	return creds, nil
}

// askGatekeeperCredentials asks on the terminal for each credential gk's manifest names,
// without echo.
func askGatekeeperCredentials(ctx context.Context, gk gatekeeperInfo) (map[string]string, error) {
	creds := map[string]string{}
	if !slices.ContainsFunc(gk.Credentials, func(c credentialInfo) bool { return !c.Optional }) && !isTerminal(ctx) {
		return creds, nil // none is required: connect without
	}
	std := stdio(ctx)
	tty, isTTY := std.in.(*os.File)
	if !isTTY || !term.IsTerminal(int(tty.Fd())) {
		return nil, fmt.Errorf("%s asks for credentials (%s) and standard input is not a terminal: pass --credentials-file FILE "+
			"(a JSON object like {\"%s\": \"SECRET\"}), or - to read it from standard input", gk.Name, credentialList(gk), gk.Credentials[0].Name)
	}
	for _, cr := range gk.Credentials {
		label := cr.Name
		if cr.Description != "" {
			label += " (" + cr.Description + ")"
		}
		if cr.Optional {
			label += " [optional: Enter skips it]"
		}
		v, err := readPassword(std.err, tty, label+": ")
		if err != nil {
			return nil, fmt.Errorf("read credential %s: %w", cr.Name, err)
		}
		if v == "" && cr.Optional {
			continue
		}
		creds[cr.Name] = v
	}
	return creds, nil
}

// isTerminal reports whether the command's standard input is a terminal.
func isTerminal(ctx context.Context) bool {
	tty, ok := stdio(ctx).in.(*os.File)
	return ok && term.IsTerminal(int(tty.Fd()))
}

// credentialList names the credentials of gk's manifest.
func credentialList(gk gatekeeperInfo) string {
	var names []string
	for _, cr := range gk.Credentials {
		names = append(names, cr.Name)
	}
	if len(names) == 0 {
		return "no credentials"
	}
	return strings.Join(names, ", ")
}

// resourceList names the resource patterns of gk's manifest.
func resourceList(gk gatekeeperInfo) string {
	var res []string
	for _, r := range gk.Resources {
		res = append(res, r.URLPattern)
	}
	return strings.Join(res, ", ")
}

// pickGatekeeper finds the installed gatekeeper whose ID or name is key.
func pickGatekeeper(gks []gatekeeperInfo, key string) (gatekeeperInfo, error) {
	for _, g := range gks {
		if g.ID == key || g.Name == key {
			return g, nil
		}
	}
	var names []string
	for _, g := range gks {
		names = append(names, g.Name)
	}
	if len(names) == 0 {
		return gatekeeperInfo{}, fmt.Errorf("no gatekeeper %q: none is installed (the admin installs one with `atelier gatekeeper install FILE`)", key)
	}
	return gatekeeperInfo{}, fmt.Errorf("no gatekeeper %q is installed; there are: %s (see `atelier gatekeeper list`)", key, strings.Join(names, ", "))
}

// pickAccount finds the account whose ID or resource is key, else the only one on the
// gatekeeper named key.
func pickAccount(accts []accountInfo, key string) (accountInfo, error) {
	var named []accountInfo
	for _, a := range accts {
		if a.ID == key || a.Resource == key {
			return a, nil
		}
		if a.Name == key {
			named = append(named, a)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return accountInfo{}, fmt.Errorf("you have no account %q (an account's ID, resource URL or gatekeeper name): see `atelier account list`, "+
			"or connect one with `atelier account connect GATEKEEPER RESOURCE`", key)
	}
	return accountInfo{}, fmt.Errorf("%d of your accounts are on gatekeeper %s: name one by its resource URL or ID (see `atelier account list`)", len(named), key)
}

// findAccount returns the caller's account that key names (pickAccount).
func findAccount(ctx context.Context, c *client, key string) (accountInfo, error) {
	accts, err := listAccounts(ctx, c)
	if err != nil {
		return accountInfo{}, err
	}
	return pickAccount(accts, key)
}

// findGatekeeper returns the installed gatekeeper that key names (pickGatekeeper).
func findGatekeeper(ctx context.Context, c *client, key string) (gatekeeperInfo, error) {
	gks, err := await[[]gatekeeperInfo](ctx, c, c.api.Call(ctx, "listGatekeepers"))
	if err != nil {
		return gatekeeperInfo{}, err
	}
	return pickGatekeeper(gks, key)
}

// listAccounts returns the caller's accounts.
func listAccounts(ctx context.Context, c *client) ([]accountInfo, error) {
	return await[[]accountInfo](ctx, c, c.api.Call(ctx, "listAccounts"))
}

// bindingFlag is the value of --gatekeeper NAME=ACCOUNT: repeatable, each value one binding
// or a comma-separated list of them.
type bindingFlag struct{ pairs [][2]string }

func (b *bindingFlag) String() string {
	var out []string
	for _, p := range b.pairs {
		out = append(out, p[0]+"="+p[1])
	}
	return strings.Join(out, ",")
}

func (b *bindingFlag) Set(v string) error {
	for _, item := range commaList(v) {
		name, acct, ok := strings.Cut(item, "=")
		if !ok || name == "" || acct == "" {
			return fmt.Errorf("%q is not NAME=ACCOUNT, e.g. board=https://api.example.com/boards/team", item)
		}
		b.pairs = append(b.pairs, [2]string{name, acct})
	}
	return nil
}

// resolve looks the bindings' accounts up among the caller's, by ID, resource or gatekeeper
// name, and returns them by binding name (nil when there are none).
func (b *bindingFlag) resolve(ctx context.Context, c *client) (map[string]accountInfo, error) {
	if len(b.pairs) == 0 {
		return nil, nil
	}
	accts, err := listAccounts(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]accountInfo{}
	for _, p := range b.pairs {
		if _, dup := out[p[0]]; dup {
			return nil, usageError{fmt.Sprintf("--gatekeeper %s= is given twice", p[0])}
		}
		a, err := pickAccount(accts, p[1])
		if err != nil {
			return nil, fmt.Errorf("--gatekeeper %s=%s: %w", p[0], p[1], err)
		}
		out[p[0]] = a
	}
	return out, nil
}

// accountIDs maps each binding name to its account's ID, as the API takes them (nil for none).
func accountIDs(bound map[string]accountInfo) map[string]string {
	if bound == nil {
		return nil
	}
	out := make(map[string]string, len(bound))
	for name, a := range bound {
		out[name] = a.ID
	}
	return out
}

func accountListCommand() command {
	return command{
		name:    "list",
		usage:   "[--server URL] [--json]",
		summary: "list your gatekeeper accounts",
		details: `Lists your connected accounts: ID, gatekeeper, resource kind and URL. Never the credentials.

Examples:
  atelier account list
  atelier account list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"account list takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				accts, err := listAccounts(ctx, c)
				if err != nil {
					return err
				}
				sort.SliceStable(accts, func(i, j int) bool { return accts[i].Name < accts[j].Name })
				return printList(stdio(ctx).out, accts, *asJSON,
					"No accounts yet: connect one with `atelier account connect GATEKEEPER RESOURCE` (see `atelier gatekeeper list`).",
					"ID\tGATEKEEPER\tKIND\tRESOURCE\tCREATED\tSTATE", func(a accountInfo) string {
						state := "ok"
						if a.State != "" {
							state = a.State + " (run `atelier account connect` again)"
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", a.ID, a.Name, a.Kind, a.Resource, formatTime(a.Created, "2006-01-02 15:04"), state)
					})
			}
		},
	}
}

func accountDisconnectCommand() command {
	return command{
		name:    "disconnect",
		usage:   "[--server URL] ID|RESOURCE|GATEKEEPER",
		summary: "disconnect one of your gatekeeper accounts",
		details: `Removes the account and its credentials. Bindings that use it (gadgets, agents, snippets) fail
from their next call on, saying the account was disconnected. The account is named by its ID,
its resource URL, or its gatekeeper's name when you have only one account on it.

Examples:
  atelier account disconnect acct_3k2x...
  atelier account disconnect https://api.example.com/boards/team
  atelier account disconnect board`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the account's ID, resource URL or gatekeeper name (see `atelier account list`)"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				a, err := findAccount(ctx, c, args[0])
				if err != nil {
					return err
				}
				if _, err := await[any](ctx, c, c.api.Call(ctx, "disconnectAccount", a.ID)); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Disconnected %s %s (%s).\n", a.Name, a.Resource, a.ID)
				return nil
			}
		},
	}
}
