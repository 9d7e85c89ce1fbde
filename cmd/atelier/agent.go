package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
)

// scopeEntry is an agent's access to one workspace (createAgent's scope).
type scopeEntry struct {
	Role        string            `json:"role"`
	Gadgets     []string          `json:"gadgets"`
	Gatekeepers map[string]string `json:"gatekeepers,omitempty"`
}

// agentInfo is an agent as listAgents describes it.
type agentInfo struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Scope struct {
		Workspaces map[string]scopeEntry `json:"workspaces"`
	} `json:"scope"`
	Created any `json:"created"`
}

func agentCommand() command {
	return command{
		name:    "agent",
		summary: "create, list and revoke agents: tokens with a subset of your access",
		details: `An agent is a token for a program (an AI agent, a script, CI) that acts for you with at most
the access you give it: one workspace, a role (use or build), some gadgets, and gatekeeper
accounts in its Code Mode env. It is checked on every call; revoking it stops the token at once.
The program passes the token as ATELIER_TOKEN to the CLI, or to authenticate() over Cap'n Web.

Examples:
  atelier agent create helper --workspace home --role use --gadget todo
  atelier agent list
  atelier agent revoke helper`,
		subcommands: []command{agentCreateCommand(), agentListCommand(), agentRevokeCommand()},
	}
}

func agentCreateCommand() command {
	return command{
		name:    "create",
		usage:   "[--workspace ID|NAME] --role use|build [--gadget NAME,...] [--gatekeeper BINDING=ACCOUNT] [--json] NAME",
		summary: "create an agent and print its token (shown once)",
		details: `Creates agent NAME with access to one workspace (--workspace, its ID or name; default: the
current one) with at most --role, to the gadgets named with --gadget ('*' for all of them;
none by default), and with your gatekeeper accounts in its Code Mode env: --gatekeeper
board=ACCOUNT makes env.board the account (its ID, resource URL or gatekeeper name, see
'atelier account list'). Prints the agent's token, which is shown only this once.

Examples:
  atelier agent create helper --role use --gadget todo,notes
  atelier agent create planner --workspace planning --role use --gatekeeper board=https://api.example.com/boards/team
  atelier agent create ci --role build --gadget '*' --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			role := fs.String("role", "", "the most the agent may do in the workspace: use or build")
			gadgets := &grantList{}
			fs.Var(gadgets, "gadget", "gadgets the agent may call, comma-separated or repeated ('*': all)")
			bindings := &bindingFlag{}
			fs.Var(bindings, "gatekeeper", "BINDING=ACCOUNT: one of your gatekeeper accounts as env.BINDING of its snippets (repeatable)")
			asJSON := fs.Bool("json", false, "print {id, token} as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the agent's name"}
				}
				if *role != "use" && *role != "build" {
					return usageError{"--role use or --role build is required: the most the agent may do in the workspace"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ws, err := resolveWorkspace(ctx, c, *workspace)
				if err != nil {
					return err
				}
				bound, err := bindings.resolve(ctx, c)
				if err != nil {
					return err
				}
				entry := scopeEntry{Role: *role, Gadgets: append([]string{}, gadgets.grants...), Gatekeepers: accountIDs(bound)}
				scope := map[string]any{"workspaces": map[string]any{ws.ID: entry}}
				res, err := await[struct {
					ID    string `json:"id"`
					Token string `json:"token"`
				}](ctx, c, c.api.Call(ctx, "createAgent", args[0], scope))
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				if *asJSON {
					return printJSON(out, res)
				}
				fmt.Fprintf(out, "Created agent %s (%s): %s in workspace %s, gadgets %s", args[0], res.ID, *role, ws.Name, gadgetsText(entry.Gadgets))
				if len(bound) > 0 {
					var gks []string
					for name, a := range bound {
						gks = append(gks, fmt.Sprintf("%s=%s %s", name, a.Name, a.Resource))
					}
					sort.Strings(gks)
					fmt.Fprintf(out, ", gatekeeper accounts %s", strings.Join(gks, ", "))
				}
				fmt.Fprintf(out, ".\nIts token, shown only this once (store it now; `atelier agent revoke %s` stops it):\n\n  %s\n\n"+
					"The agent passes it as ATELIER_TOKEN, e.g. ATELIER_TOKEN=... atelier exec snippet.js\n", args[0], res.Token)
				return nil
			}
		},
	}
}

// gadgetsText renders an agent's gadget list.
func gadgetsText(gs []string) string {
	switch {
	case len(gs) == 0:
		return "none"
	case len(gs) == 1 && gs[0] == "*":
		return "all"
	}
	return strings.Join(gs, ",")
}

func agentListCommand() command {
	return command{
		name:    "list",
		usage:   "[--server URL] [--json]",
		summary: "list your agents and their scopes",
		details: `Lists your agents with the workspace, role, gadgets and gatekeeper accounts each may use.

Examples:
  atelier agent list
  atelier agent list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"agent list takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ags, err := await[[]agentInfo](ctx, c, c.api.Call(ctx, "listAgents"))
				if err != nil || *asJSON {
					if err == nil {
						err = printJSON(stdio(ctx).out, ags)
					}
					return err
				}
				wss, err := await[[]workspaceInfo](ctx, c, c.api.Call(ctx, "listWorkspaces"))
				if err != nil {
					return err
				}
				accts, err := listAccounts(ctx, c)
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, ags, false,
					"No agents yet: create one with `atelier agent create NAME --role use --gadget ...`.",
					"ID\tNAME\tCREATED\tSCOPE", func(a agentInfo) string {
						return fmt.Sprintf("%s\t%s\t%s\t%s", a.ID, a.Name, formatTime(a.Created, "2006-01-02 15:04"), scopeText(a, wss, accts))
					})
			}
		},
	}
}

// scopeText renders an agent's scope: per workspace (by name) its role, gadgets and
// gatekeeper bindings (by gatekeeper and resource).
func scopeText(a agentInfo, wss []workspaceInfo, accts []accountInfo) string {
	var parts []string
	for id, e := range a.Scope.Workspaces {
		name := nameOf(wss, id)
		if name == "" {
			name = id
		}
		s := fmt.Sprintf("%s: %s, gadgets %s", name, e.Role, gadgetsText(e.Gadgets))
		var gks []string
		for binding, acct := range e.Gatekeepers {
			what := acct
			for _, ac := range accts {
				if ac.ID == acct {
					what = ac.Name + " " + ac.Resource
				}
			}
			gks = append(gks, binding+"="+what)
		}
		sort.Strings(gks)
		if len(gks) > 0 {
			s += ", " + strings.Join(gks, ", ")
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func agentRevokeCommand() command {
	return command{
		name:    "revoke",
		usage:   "[--server URL] NAME|ID",
		summary: "revoke an agent: its token stops working at once",
		details: `Revokes the agent with this name or ID (see 'atelier agent list'): its token is refused from
its next call on, also in sessions it has open.

Examples:
  atelier agent revoke helper
  atelier agent revoke agent_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the agent's name or ID (see `atelier agent list`)"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ags, err := await[[]agentInfo](ctx, c, c.api.Call(ctx, "listAgents"))
				if err != nil {
					return err
				}
				var found []agentInfo
				for _, a := range ags {
					if a.ID == args[0] || a.Name == args[0] {
						found = append(found, a)
					}
				}
				switch {
				case len(found) == 0:
					return fmt.Errorf("you have no agent named %q or with that ID: see `atelier agent list`", args[0])
				case len(found) > 1:
					return fmt.Errorf("%d of your agents are named %q: revoke one by its ID (see `atelier agent list`)", len(found), args[0])
				}
				if _, err := await[any](ctx, c, c.api.Call(ctx, "revokeAgent", found[0].ID)); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Revoked agent %s (%s): its token is refused from now on.\n", found[0].Name, found[0].ID)
				return nil
			}
		},
	}
}
