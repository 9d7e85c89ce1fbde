package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"atelier/capnweb"
)

// defaultServer is the API URL of `atelier serve` with its default --addr.
const defaultServer = "ws://127.0.0.1:8787/api"

// dialTimeout bounds connecting to the server (the calls afterwards are bounded by Ctrl-C).
const dialTimeout = 15 * time.Second

// serverFlag defines --server, whose default is $ATELIER_SERVER or defaultServer.
func serverFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("ATELIER_SERVER")
	if def == "" {
		def = defaultServer
	}
	return fs.String("server", def, "URL of the server's API, e.g. ws://HOST:PORT/api or http://HOST:PORT (env ATELIER_SERVER)")
}

// workspaceFlag defines --workspace, whose default is $ATELIER_WORKSPACE; empty means the
// workspace chosen with `atelier workspace use`.
// -w is short for it.
func workspaceFlag(fs *flag.FlagSet) *string {
	ws := fs.String("workspace", os.Getenv("ATELIER_WORKSPACE"),
		"ID of the workspace to work in (env ATELIER_WORKSPACE; default: the one chosen with atelier workspace use)")
	fs.StringVar(ws, "w", *ws, "short for --workspace")
	return ws
}

// serverURL turns what the user typed into the WebSocket URL of the API, which is also the key
// of the server's credentials: "host:port" and "http://host:port" become "ws://host:port/api",
// "https://..." becomes "wss://...".
func serverURL(raw string) (string, error) {
	if !strings.Contains(raw, "://") {
		raw = "ws://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", usageError{fmt.Sprintf("--server %q is not a URL like ws://127.0.0.1:8787/api", raw)}
	}
	switch u.Scheme {
	case "ws", "wss":
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", usageError{fmt.Sprintf("--server %q: the scheme must be ws, wss, http or https", raw)}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/api"
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}

// serverHint is the --server flag to repeat in a suggested command line ("" for the default).
func serverHint(server string) string {
	def := defaultServer
	if env := os.Getenv("ATELIER_SERVER"); env != "" {
		def, _ = serverURL(env)
	}
	if server == def {
		return ""
	}
	return " --server " + server
}

// dial opens a Cap'n Web session with the server at url (see serverURL).
func dial(ctx context.Context, url string) (*capnweb.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w\nIs `atelier serve` running there? Pass --server URL or set ATELIER_SERVER", url, err)
	}
	return s, nil
}

// client is an authenticated session with a server, made from the saved credentials.
type client struct {
	server string
	creds  *credentials
	sess   *capnweb.Session
	root   *capnweb.Stub
	api    *capnweb.Promise // the authenticated API
}

// connect dials the server named by the --server flag value and authenticates with
// $ATELIER_TOKEN when it is set (an agent's token, or the admin token `serve` printed), else with
// the token that `atelier login` saved for that server.
func connect(ctx context.Context, server string) (*client, error) {
	url, err := serverURL(server)
	if err != nil {
		return nil, err
	}
	creds, err := loadCredentials()
	if err != nil {
		return nil, err
	}
	token := os.Getenv("ATELIER_TOKEN")
	if token == "" {
		token = creds.Servers[url].Token
	}
	if token == "" {
		return nil, fmt.Errorf("not logged in to %s: run `atelier login%s` first, or set ATELIER_TOKEN", url, serverHint(url))
	}
	sess, err := dial(ctx, url)
	if err != nil {
		return nil, err
	}
	root := sess.Main()
	return &client{server: url, creds: creds, sess: sess, root: root, api: root.Call(ctx, "authenticate", token)}, nil
}

// Close ends the session.
func (c *client) Close() {
	if c.api != nil {
		c.api.Dispose()
	}
	c.root.Dispose()
	c.sess.Close()
}

// saved returns what the credentials file holds for this server.
func (c *client) saved() serverCredentials { return c.creds.Servers[c.server] }

// remember updates this server's entry of the credentials file.
func (c *client) remember(update func(*serverCredentials)) error {
	e := c.creds.Servers[c.server]
	update(&e)
	c.creds.Servers[c.server] = e
	return c.creds.save()
}

// workspace returns a promise for the Workspace stub with the given ID, or the current one of
// `atelier workspace use` when id is empty.
func (c *client) workspace(ctx context.Context, id string) (*capnweb.Promise, error) {
	if id == "" {
		id = c.saved().Workspace
	}
	if id == "" {
		return nil, fmt.Errorf("no workspace selected: run `atelier workspace list` and `atelier workspace use ID` " +
			"(or `atelier workspace create NAME`), or pass --workspace ID")
	}
	return c.api.Call(ctx, "openWorkspace", id), nil
}

// errorCode returns the API error code (UNAUTHORIZED, NOT_FOUND, ...) of a rejected call, or "".
func errorCode(err error) string {
	var e *capnweb.Error
	if errors.As(err, &e) {
		code, _ := e.Props["code"].(string)
		return code
	}
	return ""
}

// errorMessage is the message of a refused call (err's text for other errors).
func errorMessage(err error) string {
	var e *capnweb.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// explain rewrites an error of a call so that it says what to do next.
func (c *client) explain(err error) error {
	var e *capnweb.Error
	switch {
	case errors.As(err, &e):
		switch code := errorCode(err); code {
		case "UNAUTHORIZED":
			if os.Getenv("ATELIER_TOKEN") != "" {
				return fmt.Errorf("%s\nThe token in ATELIER_TOKEN was refused by %s: check it, or unset it to use your saved login", e.Message, c.server)
			}
			return fmt.Errorf("%s\nYour login to %s is not valid any more: run `atelier login%s`", e.Message, c.server, serverHint(c.server))
		case "":
			return errors.New(e.Error())
		default:
			return fmt.Errorf("%s (%s)", e.Message, code)
		}
	case c.sess.Err() != nil:
		return fmt.Errorf("connection to %s lost: %w", c.server, c.sess.Err())
	}
	return err
}

// await awaits p and converts its value to T, explaining errors.
func await[T any](ctx context.Context, c *client, p *capnweb.Promise) (T, error) {
	v, err := capnweb.AwaitAs[T](ctx, p)
	if err != nil {
		return v, c.explain(err)
	}
	return v, nil
}

// printList prints items as JSON when asJSON is set, else as a table with the tab-separated
// header and one row per item (row returns its tab-separated cells), or the empty message
// when there are none.
func printList[T any](w io.Writer, items []T, asJSON bool, empty, header string, row func(T) string) error {
	if asJSON {
		return printJSON(w, items)
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, empty)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, row(it))
	}
	return tw.Flush()
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("print result as JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// formatTime renders a timestamp from the API (a Date, or milliseconds since the epoch) in
// local time.
func formatTime(v any, layout string) string {
	switch t := v.(type) {
	case time.Time:
		return t.Local().Format(layout)
	case float64:
		return time.UnixMilli(int64(t)).Local().Format(layout)
	case nil:
		return "-"
	}
	return fmt.Sprint(v)
}
