package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// hookGadget is the name of h's gadget, or its ID when the API gave no name.
func hookGadget(h kernel.HookInfo) string {
	if h.GadgetName != "" {
		return h.GadgetName
	}
	return h.Gadget
}

// webhookURL is the URL the service posts h's events to, "" when h is not a webhook (a poll or
// notify hook has a URL too, which nothing posts to).
func webhookURL(h kernel.HookInfo) string {
	if h.Source != "webhook" {
		return ""
	}
	return h.URL
}

func hookCommand() command {
	return command{
		name:    "hook",
		summary: "list, add and remove the hooks through which gatekeepers call gadgets back",
		details: `A hook lets a gatekeeper call a gadget back: when an event of the gatekeeper's service
happens (a webhook the service posts to the hook's URL, a poll, a notification), the host calls
one of the gadget's exported functions with the event's JSON, as the person who registered the
hook and with the gadget's grants. A gadget usually registers its hooks itself (through
atelier:host/hooks); these commands list them, add one for a gadget, and remove them. The
events a gatekeeper offers are the "hooks" of its manifest (docs/gatekeepers.md). Hooks belong
to the workspace (the current one, or -w ID), survive restarts, and go when their gadget, its
binding or the account goes. Needs the build role.

Examples:
  atelier hook list
  atelier hook list --gadget slides --json
  atelier hook add slides notes note-added on-note
  atelier hook add slides notes digest on-digest --params '{"everyMs": 3600000}'
  atelier hook remove hk_3k2x...`,
		subcommands: []command{hookListCommand(), hookAddCommand(), hookRemoveCommand()},
	}
}

func hookListCommand() command {
	return command{
		name:    "list",
		usage:   "[--gadget NAME] [--workspace ID] [--json]",
		summary: "list the hooks of the workspace's gadgets",
		details: `Lists the workspace's hooks (or only GADGET's, with --gadget): the event and the gatekeeper
binding it comes through, the function it calls, its source (webhook, poll or notify), the URL
a webhook posts to (give it to the service), how many times it fired, when it last fired,
who registered it (it fires as them) and the last firing's error, if any.

Examples:
  atelier hook list
  atelier hook list --gadget slides
  atelier hook list --json -w ws_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			gadget := fs.String("gadget", "", "list only the hooks of the gadget NAME")
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"hook list takes no arguments (for one gadget's hooks: --gadget NAME)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				call := []any{}
				if *gadget != "" {
					call = append(call, *gadget)
				}
				hs, err := capnweb.AwaitAs[[]kernel.HookInfo](ctx, ws.Call(ctx, "listHooks", call...))
				if err != nil {
					return explainHook(c, err, *gadget, "")
				}
				empty := "No hooks in this workspace: a gadget registers one through atelier:host/hooks, or add one with `atelier hook add GADGET BINDING EVENT FUNCTION`."
				if *gadget != "" {
					empty = fmt.Sprintf("%s has no hooks: it registers them through atelier:host/hooks, or add one with `atelier hook add %s BINDING EVENT FUNCTION`.", *gadget, *gadget)
				}
				return printList(stdio(ctx).out, hs, *asJSON, empty,
					"ID\tGADGET\tEVENT\tCALLS\tSOURCE\tURL\tFIRES\tLAST FIRE\tCREATOR\tLAST ERROR", func(h kernel.HookInfo) string {
						last, lastErr := "-", "-"
						if !h.LastFire.IsZero() {
							last = formatTime(h.LastFire, "2006-01-02 15:04:05")
						}
						if h.LastError != "" {
							lastErr = oneLine(h.LastError, 80)
						}
						return fmt.Sprintf("%s\t%s\t%s.%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", h.ID, hookGadget(h), h.Binding, h.Event, h.Method, h.Source,
							orDash(webhookURL(h)), h.Fires, last, h.Creator, lastErr)
					})
			}
		},
	}
}

func hookAddCommand() command {
	return command{
		name:    "add",
		usage:   "[--params JSON] [--workspace ID] [--json] GADGET BINDING EVENT FUNCTION",
		summary: "make a gatekeeper's event call a gadget's function",
		details: `Registers a hook: when EVENT happens at the service of the gatekeeper that GADGET reaches as
BINDING (see 'atelier gadget gatekeeper-bindings'), the host calls GADGET's FUNCTION with the
event's JSON as its one argument, as you. EVENT is one of the "hooks" of the gatekeeper's
manifest; FUNCTION is a WIT name (on-note) or an RPC name (onNote), INTERFACE.FUNCTION inside
an exported interface. --params gives the gatekeeper JSON for the hook (filters, a resource,
{"everyMs": N} for a poll), at most 4 KiB. The gatekeeper is asked to subscribe first (it may
create the webhook at the service, or refuse); the hook is kept only when it agreed. A webhook
hook's URL is printed: the service posts the events there, signed as the manifest says.

Examples:
  atelier hook add slides notes note-added on-note
  atelier hook add slides notes digest on-digest --params '{"everyMs": 3600000}'
  atelier hook add planner board card-moved api.card-moved -w ws_3k2x... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			params := fs.String("params", "", `JSON for the gatekeeper, e.g. '{"everyMs": 3600000}' (at most 4 KiB)`)
			asJSON := fs.Bool("json", false, "print the new hook as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 4 {
					return usageError{"want a gadget, its gatekeeper binding, an event and a function (see `atelier gadget gatekeeper-bindings`)"}
				}
				if *params != "" && !json.Valid([]byte(*params)) {
					return usageError{fmt.Sprintf(`--params %s is not JSON: write it like '{"everyMs": 3600000}'`, *params)}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				gadget, binding, event, method := args[0], args[1], args[2], rpcMethod(args[3])
				call := []any{gadget, binding, event, method}
				if *params != "" {
					call = append(call, *params)
				}
				h, err := capnweb.AwaitAs[kernel.HookInfo](ctx, ws.Call(ctx, "registerHook", call...))
				if err != nil {
					return explainHook(c, err, gadget, binding)
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, h)
				}
				out := stdio(ctx).out
				fmt.Fprintf(out, "Added hook %s: %s of %s's binding %s calls %s.%s.\n", h.ID, h.Event, gadget, h.Binding, gadget, h.Method)
				if url := webhookURL(h); url != "" {
					fmt.Fprintf(out, "The service posts the events to\n  %s\n", url)
				}
				fmt.Fprintf(out, "See it with `atelier hook list`, remove it with `atelier hook remove %s`.\n", h.ID)
				return nil
			}
		},
	}
}

func hookRemoveCommand() command {
	return command{
		name:    "remove",
		usage:   "[--workspace ID] ID",
		summary: "remove a hook of the workspace",
		details: `Removes the hook with this ID (see 'atelier hook list'): it fires no more, its URL answers
404, and the gatekeeper is asked to unsubscribe at the service (best effort). A firing in
progress finishes. Anyone with the build role in the workspace may remove any of its hooks.

Example:
  atelier hook remove hk_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the ID of a hook (see `atelier hook list`)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = capnweb.AwaitAs[any](ctx, ws.Call(ctx, "removeHook", args[0]))
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("this workspace has no hook %s: run `atelier hook list` to see its hooks (or pass -w for another workspace)", args[0])
				}
				if err != nil {
					return c.explain(err)
				}
				fmt.Fprintf(stdio(ctx).out, "Removed hook %s.\n", args[0])
				return nil
			}
		},
	}
}

// explainHook rewrites a refused hook call so that it says what to do next.
func explainHook(c *client, err error, gadget, binding string) error {
	msg := errorMessage(err)
	switch code := errorCode(err); {
	case code == "NOT_FOUND" && strings.Contains(msg, "no exported function"):
		return fmt.Errorf("%s\nThe functions are the component's exports: `atelier inspect FILE.wasm` lists them (camelCase or WIT names, INTERFACE.FUNCTION inside an interface)", msg)
	case code == "NOT_FOUND" && binding != "" && strings.Contains(msg, "binding"):
		return fmt.Errorf("%s\nSee the gadgets' gatekeeper bindings with `atelier gadget gatekeeper-bindings`, or bind one with `atelier gadget bind-gatekeeper %s %s ACCOUNT`", msg, gadget, binding)
	case code == "NOT_FOUND" && gadget != "":
		return fmt.Errorf("%s\nSee the gadgets of this workspace with `atelier gadget list`", msg)
	case code == "INVALID_ARGUMENT" && strings.Contains(msg, "hook event"):
		return fmt.Errorf("%s\nThe events a gatekeeper offers are the \"hooks\" of its manifest: pick one of them, or bind the gadget to a gatekeeper that has the event (`atelier gadget bind-gatekeeper`)", msg)
	}
	return c.explain(err)
}
