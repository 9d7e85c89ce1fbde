package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"atelier/capnweb"
)

// gadgetInfo is a gadget as the API describes it (GadgetInfo in docs/api.md).
type gadgetInfo struct {
	Name     string            `json:"name"`
	Grants   []string          `json:"grants"`
	Current  int               `json:"current"`
	Versions []versionInfo     `json:"versions"`
	Bindings map[string]string `json:"bindings"`
}

// versionInfo is one stored version of a gadget's code.
type versionInfo struct {
	Number  int    `json:"number"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Client  string `json:"client"` // sha256 of the version's UI script ("" for none)
	Created any    `json:"created"`
}

func gadgetCommand() command {
	return command{
		name:    "gadget",
		summary: "deploy, list, call and watch the gadgets of the current workspace",
		details: `Works with the gadgets of the current workspace (see 'atelier workspace use', or pass
--workspace ID) on the server you logged in to.

Examples:
  atelier gadget deploy todo todo.wasm --grant atelier:host/kv,atelier:host/log,atelier:host/events
  atelier gadget call todo add '"buy milk"'
  atelier gadget logs todo
  atelier gadget rename todo chores
  atelier gadget delete chores`,
		subcommands: []command{
			gadgetDeployCommand(), gadgetListCommand(), gadgetCallCommand(), gadgetLogsCommand(),
			gadgetVersionsCommand(), gadgetRollbackCommand(), gadgetClientCommand(),
			gadgetRenameCommand(), gadgetDeleteCommand(),
			gadgetBindGatekeeperCommand(), gadgetUnbindGatekeeperCommand(), gadgetGatekeeperBindingsCommand(),
		},
	}
}

// grantList is the value of --grant: repeatable, each value a comma-separated list.
type grantList struct {
	set    bool
	grants []string
}

func (g *grantList) String() string { return strings.Join(g.grants, ",") }

func (g *grantList) Set(v string) error {
	g.set = true
	g.grants = append(g.grants, commaList(v)...)
	return nil
}

// commaList splits a flag value at commas, trimmed, without empty items.
func commaList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// gadgetClient connects and opens the workspace of the --workspace flag.
func gadgetClient(ctx context.Context, server, workspace string) (*client, *capnweb.Promise, error) {
	c, err := connect(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	ws, err := c.workspace(ctx, workspace)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, ws, nil
}

func gadgetDeployCommand() command {
	return command{
		name:    "deploy",
		usage:   "[--grant NAME,...] [--client FILE.js] NAME FILE.wasm|DIR",
		summary: "create a gadget from a component or a JS gadget's folder, or deploy a new version of it",
		details: `Uploads a component (build one with sdk/build-gadget.sh), or the .js and .ts files of a
folder whose server.js or server.ts exports class Gadget (a JS gadget, run by the server's
embedded JavaScript engine; it needs the grants atelier:host/kv, log, events and bindings), as
gadget NAME of the current workspace: creates the gadget if there is none of that name, else
makes the upload its new current version. The gadget's state is kept across versions; 'atelier gadget rollback' returns
to an earlier one.

The gadget may import only the WASI baseline and the interfaces granted with --grant (for a new
gadget; for an existing one, --grant replaces its grants and leaving it out keeps them). A
component that imports anything else is refused with an error naming the import.

A folder's client.js is the gadget's browser UI (not server code); --client FILE.js uploads
another file as the UI (in place of the folder's client.js), in the same version as the code,
so that 'atelier gadget rollback' brings back each version's UI. A deploy without either keeps
the current UI.

Examples:
  atelier gadget deploy counter counter.wasm --grant atelier:host/kv,atelier:host/log
  atelier gadget deploy counter counter-v2.wasm
  atelier gadget deploy todo gadgets/todo-jsgadget/ \
    --grant atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			grants := &grantList{}
			fs.Var(grants, "grant", "interfaces the gadget may import, comma-separated or repeated, e.g. atelier:host/kv")
			clientFile := fs.String("client", "", "the gadget's browser UI script (client.js)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gadget name and a component file"}
				}
				name, file := args[0], args[1]
				code, size, err := readGadgetCode(file)
				if err != nil {
					return err
				}
				var ui any // the new version's UI script, sent with the code; nil keeps the UI
				if *clientFile != "" {
					src, err := os.ReadFile(*clientFile)
					if err != nil {
						return fmt.Errorf("read the UI script: %w", err)
					}
					if files, ok := code.(map[string]any); ok {
						delete(files, clientJS) // the kernel takes one UI: the --client file
					}
					ui = string(src)
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				g := ws.Call(ctx, "gadget", name)
				_, err = g.Call(ctx, "info").Await(ctx)
				var info gadgetInfo
				created := errorCode(err) == "NOT_FOUND"
				switch {
				case created:
					info, err = await[gadgetInfo](ctx, c, ws.Call(ctx, "createGadget", name, code, append([]string{}, grants.grants...), ui).Call(ctx, "info"))
				case err != nil:
					return c.explain(err)
				case grants.set:
					info, err = await[gadgetInfo](ctx, c, g.Call(ctx, "deploy", code, grants.grants, ui))
				default:
					info, err = await[gadgetInfo](ctx, c, g.Call(ctx, "deploy", code, nil, ui))
				}
				if err != nil {
					return fmt.Errorf("deploy %s as %s: %w", file, name, err)
				}
				verb := "Deployed"
				if created {
					verb = "Created gadget"
				}
				fmt.Fprintf(stdio(ctx).out, "%s %s version %d (%s, sha256 %s); grants: %s\n", verb, info.Name, info.Current,
					formatSize(size), shortHash(currentVersion(info).SHA256), grantsText(info.Grants))
				return nil
			}
		},
	}
}

// readGadgetCode reads what `gadget deploy` uploads: a component file as bytes, or a folder's
// .js and .ts files (not its subfolders) as the object {filename: source} of a JS gadget. It
// also returns the upload's size.
func readGadgetCode(path string) (any, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read the gadget code: %w", err)
	}
	if !st.IsDir() {
		code, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, fmt.Errorf("read the component: %w", err)
		}
		return code, int64(len(code)), nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read the JS gadget: %w", err)
	}
	files, size := map[string]any{}, int64(0)
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".js") && !strings.HasSuffix(n, ".ts") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(path, n))
		if err != nil {
			return nil, 0, fmt.Errorf("read the JS gadget: %w", err)
		}
		files[n] = string(src)
		size += int64(len(src))
	}
	if files["server.js"] == nil && files["server.ts"] == nil {
		return nil, 0, fmt.Errorf("%s has no server.js or server.ts: a JS gadget's folder holds a server.js (or .ts) that exports class Gadget", path)
	}
	return files, size, nil
}

func currentVersion(info gadgetInfo) versionInfo {
	for _, v := range info.Versions {
		if v.Number == info.Current {
			return v
		}
	}
	return versionInfo{}
}

func shortHash(h string) string { return h[:min(len(h), 12)] }

func grantsText(gs []string) string {
	if len(gs) == 0 {
		return "none (WASI baseline only)"
	}
	return strings.Join(gs, ", ")
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func gadgetListCommand() command {
	return command{
		name:    "list",
		usage:   "[--json]",
		summary: "list the gadgets of the current workspace",
		details: "Lists the gadgets with their current version, number of versions and grants.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"gadget list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				gs, err := await[[]gadgetInfo](ctx, c, ws.Call(ctx, "listGadgets"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, gs, *asJSON,
					"No gadgets yet: deploy one with `atelier gadget deploy NAME FILE.wasm --grant ...`.",
					"NAME\tVERSION\tVERSIONS\tGRANTS", func(g gadgetInfo) string {
						return fmt.Sprintf("%s\t%d\t%d\t%s", g.Name, g.Current, len(g.Versions), strings.Join(g.Grants, ","))
					})
			}
		},
	}
}

func gadgetCallCommand() command {
	return command{
		name:    "call",
		usage:   "NAME FUNCTION [JSON-ARG...]",
		summary: "call a gadget's exported function and print the result as JSON",
		details: `Calls FUNCTION, one of the gadget's exports, with the given arguments and prints the result
as JSON. Each argument is one JSON value: quote strings ('"buy milk"'). The function's WIT name
(make-counter) or its RPC name (makeCounter) both work; a function of an exported interface is
INTERFACE.FUNCTION. Put -- before arguments that start with '-'.

Examples:
  atelier gadget call counter increment 5
  atelier gadget call todo add '"buy milk"'
  atelier gadget call todo list
  atelier gadget call calc add -- -1 2`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) < 2 {
					return usageError{"want a gadget name and a function name"}
				}
				callArgs, err := parseJSONArgs(args[2:])
				if err != nil {
					return err
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				target := ws.Call(ctx, "gadget", args[0]).Call(ctx, "connect")
				path := strings.Split(args[1], ".")
				for _, p := range path[:len(path)-1] {
					target = target.Get(camelCase(p))
				}
				res, err := target.Call(ctx, camelCase(path[len(path)-1]), callArgs...).Await(ctx)
				if err != nil {
					return c.explain(err)
				}
				if res == capnweb.Undefined {
					return nil
				}
				return printJSON(stdio(ctx).out, res)
			}
		},
	}
}

// parseJSONArgs decodes each command-line argument as one JSON value.
func parseJSONArgs(args []string) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		d := json.NewDecoder(strings.NewReader(a))
		if err := d.Decode(&out[i]); err != nil || d.More() {
			return nil, usageError{fmt.Sprintf("argument %d (%s) is not one JSON value: quote strings like '\"text\"'", i+1, a)}
		}
	}
	return out, nil
}

// camelCase turns a WIT name into its RPC name: "make-counter" -> "makeCounter".
func camelCase(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '-':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func gadgetLogsCommand() command {
	return command{
		name:    "logs",
		usage:   "NAME",
		summary: "follow a gadget's console until Ctrl-C",
		details: `Prints every console line the gadget writes from now on (atelier:host/log, stdout and
stderr), one per line with its time and level, until Ctrl-C. Needs the build role.

Example:
  atelier gadget logs todo`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want a gadget name"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				std := stdio(ctx)
				print := func(line map[string]any) { fmt.Fprintln(std.out, formatLogLine(line)) }
				sub := ws.Call(ctx, "gadget", args[0]).Call(ctx, "logs", print)
				defer sub.Dispose()
				if _, err := sub.Await(ctx); err != nil {
					return c.explain(err)
				}
				fmt.Fprintf(std.err, "Following the console of %s (Ctrl-C to stop).\n", args[0])
				select {
				case <-ctx.Done():
				case <-c.sess.Done():
					return fmt.Errorf("connection to %s lost: %w", c.server, c.sess.Err())
				}
				stop, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, _ = sub.Call(stop, "cancel").Await(stop) // best effort: closing the session ends it too
				return nil
			}
		},
	}
}

// formatLogLine renders a console line {gadget, stream, level, text, time}.
func formatLogLine(line map[string]any) string {
	level, _ := line["level"].(string)
	if level == "" {
		level, _ = line["stream"].(string)
	}
	text, _ := line["text"].(string)
	return fmt.Sprintf("%s %-5s %s", formatTime(line["time"], "15:04:05.000"), level, text)
}

func gadgetVersionsCommand() command {
	return command{
		name:    "versions",
		usage:   "NAME",
		summary: "list the stored versions of a gadget's code",
		details: "Lists every version of the gadget's code; * marks the current one.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want a gadget name"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				info, err := await[gadgetInfo](ctx, c, ws.Call(ctx, "gadget", args[0]).Call(ctx, "info"))
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(stdio(ctx).out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "\tVERSION\tSIZE\tSHA256\tUI\tCREATED")
				for _, v := range info.Versions {
					mark := ""
					if v.Number == info.Current {
						mark = "*"
					}
					ui := "-"
					if v.Client != "" {
						ui = shortHash(v.Client)
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", mark, v.Number, formatSize(v.Size), shortHash(v.SHA256), ui,
						formatTime(v.Created, "2006-01-02 15:04:05"))
				}
				return tw.Flush()
			}
		},
	}
}

func gadgetRollbackCommand() command {
	return command{
		name:    "rollback",
		usage:   "NAME VERSION",
		summary: "make an earlier version of a gadget current",
		details: `Makes VERSION (see 'atelier gadget versions') the gadget's current code. The state is kept.

Example:
  atelier gadget rollback todo 2`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gadget name and a version number"}
				}
				version, err := strconv.Atoi(args[1])
				if err != nil || version < 1 {
					return usageError{fmt.Sprintf("version %q is not a version number (see `atelier gadget versions %s`)", args[1], args[0])}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				info, err := capnweb.AwaitAs[gadgetInfo](ctx, ws.Call(ctx, "gadget", args[0]).Call(ctx, "rollback", version))
				if errorCode(err) == "NOT_FOUND" && strings.Contains(errorMessage(err), "has no version") {
					return fmt.Errorf("gadget %s has no version %d: run `atelier gadget versions %s` to see the versions it has", args[0], version, args[0])
				}
				if err != nil {
					return c.explain(err)
				}
				fmt.Fprintf(stdio(ctx).out, "%s is now at version %d.\n", info.Name, info.Current)
				return nil
			}
		},
	}
}
