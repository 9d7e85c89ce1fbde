package main

import (
	"context"
	"flag"
	"fmt"
)

// workspaceInfo is a workspace as listWorkspaces and Workspace.info describe it.
type workspaceInfo struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Role  string `json:"role"`
}

func hasWorkspace(ws []workspaceInfo, id string) bool { return nameOf(ws, id) != "" }

// nameOf returns the name of the workspace with the given id, or "".
func nameOf(ws []workspaceInfo, id string) string {
	for _, w := range ws {
		if w.ID == id && id != "" {
			return w.Name
		}
	}
	return ""
}

func workspaceCommand() command {
	return command{
		name:    "workspace",
		summary: "list, create, choose, rename, join and delete workspaces on a server",
		details: `A workspace holds gadgets and is the unit of sharing. The gadget commands work in the
current workspace, which 'atelier workspace use' (or 'create') sets, remembered per server.

Examples:
  atelier workspace create home
  atelier workspace list
  atelier workspace use ws_3k2x...
  atelier workspace rename home house
  atelier workspace join 'http://127.0.0.1:8787/#/join/ws_3k2x.../atl_...'
  atelier workspace delete --yes house`,
		subcommands: []command{
			workspaceListCommand(), workspaceCreateCommand(), workspaceUseCommand(),
			workspaceRenameCommand(), workspaceDeleteCommand(), workspaceJoinCommand(),
		},
	}
}

func workspaceListCommand() command {
	return command{
		name:    "list",
		usage:   "[--server URL] [--json]",
		summary: "list your workspaces and those shared with you",
		details: "Lists the workspaces you own or that are shared with you, with your role; * marks the current one.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"workspace list takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ws, err := await[[]workspaceInfo](ctx, c, c.api.Call(ctx, "listWorkspaces"))
				if err != nil {
					return err
				}
				current := c.saved().Workspace
				return printList(stdio(ctx).out, ws, *asJSON,
					"No workspaces yet: create one with `atelier workspace create NAME`.",
					"\tID\tNAME\tROLE\tOWNER", func(w workspaceInfo) string {
						mark := ""
						if w.ID == current {
							mark = "*"
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", mark, w.ID, w.Name, w.Role, w.Owner)
					})
			}
		},
	}
}

func workspaceCreateCommand() command {
	return command{
		name:    "create",
		usage:   "[--server URL] NAME",
		summary: "create a workspace and make it the current one",
		details: `Creates a workspace that you own and makes it the current workspace.

Example:
  atelier workspace create home`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the new workspace's name"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				w, err := await[workspaceInfo](ctx, c, c.api.Call(ctx, "createWorkspace", args[0]).Call(ctx, "info"))
				if err != nil {
					return err
				}
				if err := c.remember(func(e *serverCredentials) { e.Workspace = w.ID }); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Created workspace %s (%s); it is now the current workspace.\n", w.Name, w.ID)
				return nil
			}
		},
	}
}

func workspaceUseCommand() command {
	return command{
		name:    "use",
		usage:   "[--server URL] ID|NAME",
		summary: "make a workspace the current one",
		details: `Makes the workspace with this ID (or this name, if only one of your workspaces has it) the
current one for the gadget commands on this server.

Example:
  atelier workspace use home`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want a workspace ID or name (see `atelier workspace list`)"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ws, err := await[[]workspaceInfo](ctx, c, c.api.Call(ctx, "listWorkspaces"))
				if err != nil {
					return err
				}
				w, err := pickWorkspace(ws, args[0])
				if err != nil {
					return err
				}
				if err := c.remember(func(e *serverCredentials) { e.Workspace = w.ID }); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Current workspace: %s (%s), role %s.\n", w.Name, w.ID, w.Role)
				return nil
			}
		},
	}
}

// pickWorkspace finds the workspace whose ID is key, else the only one named key.
func pickWorkspace(ws []workspaceInfo, key string) (workspaceInfo, error) {
	return pickByIDOrName(ws, key, "workspace", "atelier workspace list",
		func(w workspaceInfo) string { return w.ID }, func(w workspaceInfo) string { return w.Name })
}

// pickByIDOrName finds the item whose ID is key, else the only one whose name is key. what
// names the kind of item in errors ("workspace") and list the command that lists them.
func pickByIDOrName[T any](items []T, key, what, list string, id, name func(T) string) (T, error) {
	var named []T
	for _, it := range items {
		if id(it) == key {
			return it, nil
		}
		if name(it) == key {
			named = append(named, it)
		}
	}
	var zero T
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return zero, fmt.Errorf("you have no %s with the ID or name %q: see `%s`", what, key, list)
	}
	return zero, fmt.Errorf("%d of your %ss are named %q: pass the ID instead (see `%s`)", len(named), what, key, list)
}
