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

// lockedOut starts the server's refusal of a login while the caller's address must wait.
const lockedOut = "too many failed attempts"

// lockout returns "too many failed attempts; try again in Ns" from the refusal msg of a
// password check that the login limits held back, or "" for another refusal.
func lockout(msg string) string {
	i := strings.Index(msg, lockedOut)
	if i < 0 {
		return ""
	}
	return lockedOut + strings.TrimSpace(msg[i+len(lockedOut):])
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
		if wait := lockout(errorMessage(err)); wait != "" {
			// Said whatever the password was (docs/security.md, "Login limits").
			return fmt.Errorf("%s\nRepeated wrong passwords for %s from this address hold its logins back (the password was not checked): wait, then run the command again",
				wait, username)
		}
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
	tty := terminal(std)
	isTTY := tty != nil
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
	pw, err := askPassword(std, in, "Password: ", confirm, "type it at a terminal, pipe it in, or set ATELIER_PASSWORD")
	return username, pw, err
}

// askPassword reads a password: on a terminal by a prompt that does not echo (label; asked
// twice when confirm), else as the next line of in. hint says how else to give one when
// standard input holds none.
func askPassword(std streams, in *bufio.Reader, label string, confirm bool, hint string) (string, error) {
	tty, isTTY := std.in.(*os.File)
	if !isTTY || !term.IsTerminal(int(tty.Fd())) {
		pw, err := readLine(in)
		if err != nil || pw == "" {
			return "", fmt.Errorf("no password on standard input: %s", hint)
		}
		return pw, nil
	}
	pw, err := readPassword(std.err, tty, label)
	if err != nil {
		return "", err
	}
	if confirm {
		again, err := readPassword(std.err, tty, "Repeat the password: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", errors.New("the two passwords differ; run the command again")
		}
	}
	return pw, nil
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
