package main

import (
	"context"
	"flag"
	"fmt"
)

// gatekeeperBinding is a gadget's gatekeeper binding as listGatekeeperBindings describes it.
type gatekeeperBinding struct {
	Gadget     string `json:"gadget"`
	Name       string `json:"name"`
	Account    string `json:"account"`
	Owner      string `json:"owner,omitempty"`
	Gatekeeper string `json:"gatekeeper,omitempty"`
	Resource   string `json:"resource,omitempty"`
	Missing    bool   `json:"missing,omitempty"`
}

func gadgetBindGatekeeperCommand() command {
	return command{
		name:    "bind-gatekeeper",
		usage:   "[--workspace ID] GADGET NAME ACCOUNT",
		summary: "let a gadget reach one of your gatekeeper accounts",
		details: `Binds ACCOUNT (its ID, resource URL or gatekeeper name, see 'atelier account list') to GADGET
as NAME: the gadget calls the gatekeeper's session methods through atelier:host/bindings under
NAME, acting with your account for whoever calls the gadget. Its changes wait for your
approval ('atelier approvals list'). Needs the build role.

Examples:
  atelier gadget bind-gatekeeper slides notes https://notes.example.com/notebooks/team
  atelier gadget bind-gatekeeper planner board acct_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 3 {
					return usageError{"want a gadget, a binding name and an account"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				a, err := findAccount(ctx, c, args[2])
				if err != nil {
					return err
				}
				if _, err := await[any](ctx, c, ws.Call(ctx, "bindGatekeeper", args[0], args[1], a.ID)); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "%s reaches %s %s as %s.\n", args[0], a.Name, a.Resource, args[1])
				return nil
			}
		},
	}
}

func gadgetUnbindGatekeeperCommand() command {
	return command{
		name:    "unbind-gatekeeper",
		usage:   "[--workspace ID] GADGET NAME",
		summary: "remove a gadget's gatekeeper binding",
		details: `Removes GADGET's gatekeeper binding NAME (see 'atelier gadget gatekeeper-bindings'); its live
session is closed and the gadget's next call through NAME fails. Needs the build role.

Example:
  atelier gadget unbind-gatekeeper slides notes`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gadget and a binding name (see `atelier gadget gatekeeper-bindings`)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := await[any](ctx, c, ws.Call(ctx, "unbindGatekeeper", args[0], args[1])); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Removed the gatekeeper binding %s of %s.\n", args[1], args[0])
				return nil
			}
		},
	}
}

func gadgetGatekeeperBindingsCommand() command {
	return command{
		name:    "gatekeeper-bindings",
		usage:   "[--workspace ID] [--json]",
		summary: "list the gatekeeper bindings of the workspace's gadgets",
		details: `Lists which gadget reaches which gatekeeper account under which name, and whose account it
is. The resource is shown to callers with the build role only.

Examples:
  atelier gadget gatekeeper-bindings
  atelier gadget gatekeeper-bindings --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"gadget gatekeeper-bindings takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				bs, err := await[[]gatekeeperBinding](ctx, c, ws.Call(ctx, "listGatekeeperBindings"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, bs, *asJSON,
					"No gadget reaches a gatekeeper account: bind one with `atelier gadget bind-gatekeeper GADGET NAME ACCOUNT`.",
					"GADGET\tNAME\tGATEKEEPER\tOWNER\tRESOURCE", func(b gatekeeperBinding) string {
						if b.Missing {
							return fmt.Sprintf("%s\t%s\t-\t-\tdisconnected account %s", b.Gadget, b.Name, b.Account)
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", b.Gadget, b.Name, b.Gatekeeper, b.Owner, orDash(b.Resource))
					})
			}
		},
	}
}
