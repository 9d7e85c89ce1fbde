package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"atelier/capnweb"
)

func loginCommand() command {
	return command{
		name:    "login",
		usage:   "[--server URL] [--username NAME] [--signup]",
		summary: "log in to a server (or create an account with --signup) and save the token",
		details: `Logs in to a running 'atelier serve' and saves the session token in the user config
directory (~/.config/atelier/credentials.json, mode 0600), keyed by the server URL. The other
client commands use it until it expires or 'atelier logout' revokes it.

The username comes from --username, $ATELIER_USERNAME or a prompt; the password from
$ATELIER_PASSWORD, a prompt that does not echo (on a terminal), or the first line of standard
input. With --signup, the account is created first (usernames: 1-32 of a-z 0-9 - _, starting
with a letter; passwords: at least 8 bytes).

If the account has exactly one workspace, it becomes the current one.

Examples:
  atelier login --signup
  atelier login --server http://atelier.example.com:8787 --username ada
  ATELIER_PASSWORD=... atelier login --username ada`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			username := fs.String("username", os.Getenv("ATELIER_USERNAME"), "account name (env ATELIER_USERNAME; asked when empty)")
			signup := fs.Bool("signup", false, "create the account, then log in")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"login takes no arguments (did you mean --username NAME?)"}
				}
				return login(ctx, *server, *username, *signup)
			}
		},
	}
}

func login(ctx context.Context, server, username string, signup bool) error {
	url, err := serverURL(server)
	if err != nil {
		return err
	}
	creds, err := loadCredentials()
	if err != nil {
		return err
	}
	username, password, err := askCredentials(ctx, username, signup)
	if err != nil {
		return err
	}
	sess, err := dial(ctx, url)
	if err != nil {
		return err
	}
	c := &client{server: url, creds: creds, sess: sess, root: sess.Main()}
	defer c.Close()

	method := "login"
	if signup {
		method = "signup"
	}
	token, err := capnweb.AwaitAs[string](ctx, c.root.Call(ctx, method, username, password))
	switch code := errorCode(err); {
	case err == nil:
	case code == "UNAUTHORIZED" && !signup:
		return fmt.Errorf("wrong username or password for %s (no account yet? add --signup)", url)
	case code == "CONFLICT":
		return fmt.Errorf("the username %q is taken on %s: pick another one, or log in without --signup", username, url)
	default:
		return c.explain(err)
	}
	c.api = c.root.Call(ctx, "authenticate", token)
	workspaces, err := await[[]workspaceInfo](ctx, c, c.api.Call(ctx, "listWorkspaces"))
	if err != nil {
		return err
	}
	current := creds.Servers[url].Workspace
	if !hasWorkspace(workspaces, current) {
		current = ""
		if len(workspaces) == 1 {
			current = workspaces[0].ID
		}
	}
	if err := c.remember(func(e *serverCredentials) {
		*e = serverCredentials{Username: username, Token: token, Workspace: current}
	}); err != nil {
		return err
	}
	out := stdio(ctx).out
	verb := "Logged in to"
	if signup {
		verb = "Created the account and logged in to"
	}
	fmt.Fprintf(out, "%s %s as %s.\n", verb, url, username)
	switch {
	case current != "":
		fmt.Fprintf(out, "Current workspace: %s (%s).\n", nameOf(workspaces, current), current)
	case len(workspaces) == 0:
		fmt.Fprintln(out, "Next: create a workspace with `atelier workspace create NAME`.")
	default:
		fmt.Fprintln(out, "Next: pick a workspace with `atelier workspace list` and `atelier workspace use ID`.")
	}
	return nil
}

// askCredentials fills in the username and password from the environment, by asking on the
// terminal, or from the lines of standard input when it is not a terminal.
func askCredentials(ctx context.Context, username string, confirm bool) (string, string, error) {
	std := stdio(ctx)
	in := bufio.NewReader(std.in)
	tty, isTTY := std.in.(*os.File)
	isTTY = isTTY && term.IsTerminal(int(tty.Fd()))
	var err error
	if username == "" {
		if isTTY {
			fmt.Fprint(std.err, "Username: ")
		}
		if username, err = readLine(in); err != nil {
			return "", "", fmt.Errorf("read the username: %w (or pass --username)", err)
		}
	}
	if username == "" {
		return "", "", usageError{"no username given"}
	}
	if pw := os.Getenv("ATELIER_PASSWORD"); pw != "" {
		return username, pw, nil
	}
	if !isTTY {
		pw, err := readLine(in)
		if err != nil || pw == "" {
			return "", "", fmt.Errorf("no password on standard input: type it at a terminal, pipe it in, or set ATELIER_PASSWORD")
		}
		return username, pw, nil
	}
	pw, err := readPassword(std.err, tty, "Password: ")
	if err != nil {
		return "", "", err
	}
	if confirm {
		again, err := readPassword(std.err, tty, "Repeat the password: ")
		if err != nil {
			return "", "", err
		}
		if again != pw {
			return "", "", errors.New("the two passwords differ; run the command again")
		}
	}
	return username, pw, nil
}

// readPassword asks for a password on the terminal f without echoing it.
func readPassword(prompt io.Writer, f *os.File, label string) (string, error) {
	fmt.Fprint(prompt, label)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	return string(b), nil
}

// readLine reads one line without its line ending; the last line may lack one.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func logoutCommand() command {
	return command{
		name:    "logout",
		usage:   "[--server URL]",
		summary: "revoke the saved token of a server and forget it",
		details: `Revokes the session token that 'atelier login' saved for the server and removes it from
the credentials file. The token is forgotten even when the server has already expired it.

Example:
  atelier logout`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"logout takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := c.api.Call(ctx, "logout").Await(ctx); err != nil && errorCode(err) != "UNAUTHORIZED" {
					return c.explain(err)
				}
				delete(c.creds.Servers, c.server)
				if err := c.creds.save(); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Logged out of %s.\n", c.server)
				return nil
			}
		},
	}
}
