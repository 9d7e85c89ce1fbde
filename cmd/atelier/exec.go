package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"atelier/host/kernel"
)

// codeResult is what executeCode returns (docs/api.md, Code Mode).
type codeResult struct {
	Value any `json:"value"`
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Stack   string `json:"stack"`
	} `json:"error"`
	Console []struct {
		Level string `json:"level"`
		Text  string `json:"text"`
	} `json:"console"`
	DryRun *kernel.DryRunInfo `json:"dryRun"`
}

func execCommand() command {
	return command{
		name:    "exec",
		usage:   "[--workspace ID] [--timeout 5s] [--dry-run] [--gatekeeper NAME=ACCOUNT] FILE.ts|FILE.js|- | --commit ID | --discard ID",
		summary: "run a snippet of JavaScript or TypeScript against the gadgets of the current workspace",
		details: `Runs FILE (or standard input, with -) as a Code Mode snippet: an ES module whose default export
is an async function (env, ctx). It runs in a fresh sandbox on the server, where env.NAME is a
stub of each gadget you may call in the workspace (NAME is the gadget name in camelCase:
todo-list is env.todoList) whose methods are the gadget's exports. A file ending in .ts is
TypeScript. The console output goes to standard error, the value the function returns to
standard output as JSON. A snippet that throws exits 1 after printing the error. An agent
runs it with its own token in $ATELIER_TOKEN, and sees only the gadgets of its scope.

With --dry-run nothing changes: the gadgets' writes go to a copy of their state and gatekeeper
actions are only recorded. After the value it prints what the snippet would change (per
gadget: + added, ~ changed, - removed keys; then the actions) and the dry run's id, held for
15 minutes: --commit ID applies all its writes at once, unless a key it read or wrote changed
since (then nothing is applied: run the snippet again), and queues its actions for approval;
--discard ID drops it.

--gatekeeper NAME=ACCOUNT (repeatable) puts one of your gatekeeper accounts in env as
env.NAME, whose methods are the gatekeeper's session methods; ACCOUNT is the account's ID,
resource URL or gatekeeper name (see 'atelier account list'). Its reads are recorded and its
changes wait for your approval ('atelier approvals list'). An agent gets its accounts from
its scope instead.

Example (hello.ts):
  export default async function (env: any) {
    const item = await env.todo.add("from exec");
    console.log("added", item.id);
    return await env.todo.list();
  }

  atelier exec hello.ts
  atelier exec --dry-run hello.ts     # prints the diff and "dry run dr_..."
  atelier exec --commit dr_...
  atelier exec --gatekeeper board=https://api.example.com/boards/team pin.js`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			timeout := fs.Duration("timeout", 5*time.Second, "time limit of the snippet (at most 1m)")
			dry := fs.Bool("dry-run", false, "change nothing: print what the snippet would change, held for --commit")
			commit := fs.String("commit", "", "apply dry run ID")
			discard := fs.String("discard", "", "drop dry run ID")
			gatekeepers := &bindingFlag{}
			fs.Var(gatekeepers, "gatekeeper", "NAME=ACCOUNT: one of your gatekeeper accounts as env.NAME (repeatable)")
			return func(ctx context.Context, args []string) error {
				if *commit != "" || *discard != "" {
					if len(args) != 0 || *dry || *commit != "" && *discard != "" || len(gatekeepers.pairs) > 0 {
						return usageError{"--commit ID and --discard ID take no file and no other of --dry-run, --commit, --discard, --gatekeeper"}
					}
					return settleDryRun(ctx, *server, *workspace, *commit, *discard)
				}
				if len(args) != 1 {
					return usageError{"want one file (or - for standard input)"}
				}
				src, err := readSnippet(ctx, args[0])
				if err != nil {
					return err
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				opts := map[string]any{"timeoutMs": timeout.Milliseconds(), "typescript": strings.HasSuffix(args[0], ".ts"), "dryRun": *dry}
				bound, err := gatekeepers.resolve(ctx, c)
				if err != nil {
					return err
				}
				if bound != nil {
					opts["gatekeepers"] = accountIDs(bound)
				}
				res, err := await[codeResult](ctx, c, ws.Call(ctx, "executeCode", src, opts))
				if err != nil {
					return err
				}
				std := stdio(ctx)
				for _, l := range res.Console {
					prefix := ""
					if l.Level != "info" {
						prefix = l.Level + ": "
					}
					fmt.Fprintf(std.err, "%s%s\n", prefix, l.Text)
				}
				if e := res.Error; e != nil {
					if e.Stack != "" {
						return fmt.Errorf("%s: %s\n%s", e.Name, e.Message, strings.TrimRight(e.Stack, "\n"))
					}
					return fmt.Errorf("%s: %s", e.Name, e.Message)
				}
				if err := printJSON(std.out, res.Value); err != nil || res.DryRun == nil {
					return err
				}
				_, err = io.WriteString(std.out, res.DryRun.Text())
				return err
			}
		},
	}
}

// settleDryRun commits dry run commit, or discards dry run discard, in the workspace.
func settleDryRun(ctx context.Context, server, workspace, commit, discard string) error {
	c, ws, err := gadgetClient(ctx, server, workspace)
	if err != nil {
		return err
	}
	defer c.Close()
	out := stdio(ctx).out
	if discard != "" {
		if _, err := await[any](ctx, c, ws.Call(ctx, "discardDryRun", discard)); err != nil {
			return err
		}
		fmt.Fprintf(out, "Discarded dry run %s\n", discard)
		return nil
	}
	res, err := await[kernel.DryRunCommit](ctx, c, ws.Call(ctx, "commitDryRun", commit))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Committed dry run %s", commit)
	if len(res.Actions) > 0 {
		fmt.Fprintf(out, "; actions waiting for approval: %v", res.Actions)
	}
	fmt.Fprintln(out)
	return nil
}

// readSnippet reads the snippet file, or standard input for "-".
func readSnippet(ctx context.Context, name string) (string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdio(ctx).in)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", fmt.Errorf("read the snippet: %w", err)
	}
	if len(b) == 0 {
		return "", errors.New("the snippet is empty")
	}
	return string(b), nil
}
