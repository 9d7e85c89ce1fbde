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
}

func execCommand() command {
	return command{
		name:    "exec",
		usage:   "[--workspace ID] [--timeout 5s] FILE.ts|FILE.js|-",
		summary: "run a snippet of JavaScript or TypeScript against the gadgets of the current workspace",
		details: `Runs FILE (or standard input, with -) as a Code Mode snippet: an ES module whose default export
is an async function (env, ctx). It runs in a fresh sandbox on the server, where env.NAME is a
stub of each gadget you may call in the workspace (NAME is the gadget name in camelCase:
todo-list is env.todoList) whose methods are the gadget's exports. A file ending in .ts is
TypeScript. The console output goes to standard error, the value the function returns to
standard output as JSON. A snippet that throws exits 1 after printing the error. An agent
runs it with its own token in $ATELIER_TOKEN, and sees only the gadgets of its scope.

Example (hello.ts):
  export default async function (env: any) {
    const item = await env.todo.add("from exec");
    console.log("added", item.id);
    return await env.todo.list();
  }

  atelier exec hello.ts`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			timeout := fs.Duration("timeout", 5*time.Second, "time limit of the snippet (at most 1m)")
			return func(ctx context.Context, args []string) error {
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
				opts := map[string]any{"timeoutMs": timeout.Milliseconds(), "typescript": strings.HasSuffix(args[0], ".ts")}
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
				return printJSON(std.out, res.Value)
			}
		},
	}
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
