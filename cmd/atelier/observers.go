package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"atelier/host/kernel"
)

// observerNote explains observer requirements in the help of the commands that handle them.
const observerNote = `A workspace's owner may require collaborators with a role to be able to read some of its
gatekeeper bindings (GADGET.NAME, see 'atelier gadget gatekeeper-bindings') themselves: such a
collaborator must pick an account of their own on the same gatekeeper for the same resource URL
as the binding's account ('atelier share satisfy'); until they have, the workspace shows them
nothing (its calls fail with FAILED_PRECONDITION, saying what is missing). Requirements of use
apply to build collaborators too. The owner is never asked; agents act with their user's picks.`

func shareRequireCommand() command {
	return command{
		name:    "require",
		usage:   "[--clear] [--json] ROLE BINDING...",
		summary: "require collaborators with ROLE to read these bindings with accounts of their own (owner only)",
		details: observerNote + `

'share require ROLE BINDING...' replaces ROLE's requirements with the BINDINGs (each a
gatekeeper binding of this workspace whose account is connected); --clear drops them all.

Examples:
  atelier share require use notes.notebook
  atelier share require build notes.notebook planner.board --json
  atelier share require use --clear`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			clear := fs.Bool("clear", false, "drop the role's requirements")
			asJSON := fs.Bool("json", false, "print the role's requirements afterwards as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) == 0 || (len(args) == 1) != *clear {
					return usageError{"want a role (build or use) and the bindings to require (GADGET.NAME ...), or a role and --clear"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				role, bindings := args[0], args[1:]
				if _, err := ws.Call(ctx, "setObserverRequirements", role, bindings).Await(ctx); err != nil {
					if errorCode(err) == "NOT_FOUND" {
						return fmt.Errorf("%w\nRequire only bindings listed by `atelier gadget gatekeeper-bindings`, as GADGET.NAME", c.explain(err))
					}
					return roleError(c, err)
				}
				reqs, err := await[[]kernel.ObserverRequirement](ctx, c, ws.Call(ctx, "listObserverRequirements", role))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				if *asJSON {
					return printJSON(out, reqs)
				}
				if *clear {
					fmt.Fprintf(out, "Collaborators with the role %s need no account of their own any more", role)
					if len(reqs) > 0 {
						fmt.Fprintf(out, " beyond use's (%d)", len(reqs))
					}
					fmt.Fprintln(out, ".")
					return nil
				}
				fmt.Fprintf(out, "Collaborators with the role %s now see this workspace only once they read, with an account of their own:\n", role)
				for _, r := range reqs {
					fmt.Fprintf(out, "  %s: %s %s\n", r.Binding, r.GatekeeperName, r.Resource)
				}
				return nil
			}
		},
	}
}

func shareRequirementsCommand() command {
	return command{
		name:    "requirements",
		usage:   "[--json] [ROLE]",
		summary: "list what collaborators with a role must be able to read themselves, and whether you have",
		details: observerNote + `

Lists the requirements of ROLE (default: your own role; for the owner, build's, which include
use's): the binding, the gatekeeper and resource URL an account must be for, and, for you,
whether you met it and with which account, or what to do. A collaborator lists only their own
role's.

Examples:
  atelier share requirements
  atelier share requirements use
  atelier share requirements --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) > 1 {
					return usageError{"want at most a role (build or use)"}
				}
				role := ""
				if len(args) == 1 {
					role = args[0]
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				reqs, err := await[[]kernel.ObserverRequirement](ctx, c, ws.Call(ctx, "listObserverRequirements", role))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				err = printList(out, reqs, *asJSON,
					"This workspace asks no collaborator to read any of its bindings themselves (the owner sets that with `atelier share require ROLE GADGET.NAME`).",
					"BINDING\tROLE\tGATEKEEPER\tRESOURCE\tSTATUS", func(r kernel.ObserverRequirement) string {
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.Binding, r.Role, r.GatekeeperName, r.Resource, requirementStatus(r))
					})
				if err != nil || *asJSON {
					return err
				}
				printProblems(out, reqs)
				return nil
			}
		},
	}
}

// requirementStatus is the STATUS cell of a requirement.
func requirementStatus(r kernel.ObserverRequirement) string {
	switch {
	case r.Inactive:
		return "inactive (the binding is gone or its account disconnected)"
	case r.Satisfied && r.Account != "":
		return "met with " + r.Account
	case r.Satisfied:
		return "met"
	}
	return "to do"
}

// printProblems prints what is missing of the requirements not met, and what to do.
func printProblems(out io.Writer, reqs []kernel.ObserverRequirement) {
	for _, r := range reqs {
		if !r.Satisfied {
			fmt.Fprintf(out, "To do (%s): %s.\n", r.Binding, r.Problem)
		}
	}
}

func shareSatisfyCommand() command {
	return command{
		name:    "satisfy",
		usage:   "[--json] BINDING ACCOUNT",
		summary: "pick your own account to meet a workspace's requirement to read BINDING yourself",
		details: observerNote + `

'share satisfy BINDING ACCOUNT' picks ACCOUNT (its ID, resource URL or gatekeeper name, see
'atelier account list') for the requirement BINDING ('atelier share requirements' lists them):
it must be on the binding's gatekeeper, for the very resource URL the requirement names. If you
have none, connect one first with 'atelier account connect GATEKEEPER URL'. Disconnecting the
account later locks the workspace again until you pick another.

Examples:
  atelier share satisfy notes.notebook https://notes.example.com/notebooks/work
  atelier share satisfy notes.notebook acct_3k2x... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print your requirements afterwards as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a required binding (GADGET.NAME, see `atelier share requirements`) and one of your accounts"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				a, err := findAccount(ctx, c, args[1])
				if err != nil {
					return err
				}
				if _, err := await[any](ctx, c, ws.Call(ctx, "satisfyObserverRequirement", args[0], a.ID)); err != nil {
					return err
				}
				reqs, err := await[[]kernel.ObserverRequirement](ctx, c, ws.Call(ctx, "listObserverRequirements", ""))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				if *asJSON {
					return printJSON(out, reqs)
				}
				fmt.Fprintf(out, "You read %s with your account %s (%s %s).\n", args[0], a.ID, a.Name, a.Resource)
				left := 0
				for _, r := range reqs {
					if !r.Satisfied {
						left++
					}
				}
				if left == 0 {
					fmt.Fprintln(out, "You met all of this workspace's requirements: it is open to you.")
					return nil
				}
				fmt.Fprintf(out, "%s still to do before the workspace opens to you:\n", plural(left, "requirement"))
				printProblems(out, reqs)
				return nil
			}
		},
	}
}
