package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"atelier/capnweb"
)

const defaultServer = "ws://127.0.0.1:8787/api"

// dial connects to a running `atelier serve` and returns its API stub.
func dial(ctx context.Context, url string) (*capnweb.Session, *capnweb.Stub, error) {
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w (is `atelier serve` running? pass --server)", url, err)
	}
	return s, s.Main(), nil
}

// printJSON prints v as indented JSON.
func printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

func deployCommand() command {
	return command{
		name:    "deploy",
		usage:   "[--server URL] [--grant NAME,...] NAME FILE.wasm",
		summary: "deploy a component as a new version of a gadget on a running server",
		details: `Uploads a component to a running 'atelier serve' as the new current version of gadget NAME
(creating it if needed). The gadget may import only the WASI baseline and the interfaces given
with --grant; a component importing anything else is refused, naming the import.

Example:
  atelier deploy --grant atelier:host/kv,atelier:host/log counter counter.wasm`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := fs.String("server", defaultServer, "WebSocket URL of the server's API")
			grants := fs.String("grant", "", "comma-separated interfaces the gadget may import, e.g. atelier:host/kv")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gadget name and a component file"}
				}
				code, err := os.ReadFile(args[1])
				if err != nil {
					return err
				}
				s, api, err := dial(ctx, *server)
				if err != nil {
					return err
				}
				defer s.Close()
				res, err := api.Call(ctx, "deploy", args[0], code, splitList(*grants)).Await(ctx)
				if err != nil {
					return err
				}
				return printJSON(res)
			}
		},
	}
}

func callCommand() command {
	return command{
		name:    "call",
		usage:   "[--server URL] GADGET FUNCTION [JSON-ARG...]",
		summary: "call a gadget's exported function on a running server",
		details: `Calls FUNCTION (camelCase, e.g. makeCounter for make-counter) of GADGET with the given
arguments, each one JSON value, and prints the result as JSON.

Example:
  atelier call counter increment 5`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := fs.String("server", defaultServer, "WebSocket URL of the server's API")
			return func(ctx context.Context, args []string) error {
				if len(args) < 2 {
					return usageError{"want a gadget name and a function name"}
				}
				callArgs := make([]any, len(args)-2)
				for i, a := range args[2:] {
					if err := json.Unmarshal([]byte(a), &callArgs[i]); err != nil {
						return usageError{fmt.Sprintf("argument %d (%q) is not JSON: %v; quote strings like '\"text\"'", i+1, a, err)}
					}
				}
				s, api, err := dial(ctx, *server)
				if err != nil {
					return err
				}
				defer s.Close()
				res, err := api.Call(ctx, "gadget", args[0]).Call(ctx, args[1], callArgs...).Await(ctx)
				if err != nil {
					return err
				}
				return printJSON(res)
			}
		},
	}
}

func gadgetsCommand() command {
	return command{
		name:    "gadgets",
		usage:   "[--server URL]",
		summary: "list the gadgets of a running server",
		details: "Prints every gadget with its grants and versions as JSON.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := fs.String("server", defaultServer, "WebSocket URL of the server's API")
			return func(ctx context.Context, args []string) error {
				s, api, err := dial(ctx, *server)
				if err != nil {
					return err
				}
				defer s.Close()
				res, err := api.Call(ctx, "gadgets").Await(ctx)
				if err != nil {
					return err
				}
				return printJSON(res)
			}
		},
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
