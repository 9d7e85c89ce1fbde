package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"atelier/capnweb"
)

// yesFlag defines --yes, which skips the confirmation of a delete.
func yesFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("yes", false, "do not ask for a confirmation (needed when standard input is not a terminal)")
}

// gadgetError explains err, the failure of a call on gadget name: a missing gadget says to list
// the gadgets, a role too weak for the call says who can change it.
func gadgetError(c *client, err error, name string) error {
	if errorCode(err) == "NOT_FOUND" && strings.Contains(errorMessage(err), "has no gadget") {
		return fmt.Errorf("there is no gadget %s in this workspace: run `atelier gadget list` to see its gadgets", name)
	}
	return roleError(c, err)
}

// roleError explains err, adding to a refusal for a role too weak for the call that only the
// workspace's owner can change roles.
func roleError(c *client, err error) error {
	if errorCode(err) == "FORBIDDEN" && strings.Contains(errorMessage(err), " role in workspace ") {
		return fmt.Errorf("%w\nOnly the workspace's owner can change your role (`atelier collaborator list` shows who has which)", c.explain(err))
	}
	return c.explain(err)
}

func gadgetDeleteCommand() command {
	return command{
		name:    "delete",
		usage:   "[--yes] NAME",
		summary: "delete a gadget with its state and every version",
		details: `Deletes the gadget, its stored state and every version of its code, and ends its
subscriptions. Needs the build role. Asks for a confirmation on the terminal; --yes skips it
(and is needed when standard input is not a terminal, as in scripts).

Examples:
  atelier gadget delete todo
  atelier gadget delete --yes todo`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			yes := yesFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the name of the gadget to delete (see `atelier gadget list`)"}
				}
				name := args[0]
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				g := ws.Call(ctx, "gadget", name)
				info, err := capnweb.AwaitAs[gadgetInfo](ctx, g.Call(ctx, "info"))
				if err != nil {
					return gadgetError(c, err, name)
				}
				what := fmt.Sprintf("delete gadget %s with its state and %s", name, plural(len(info.Versions), "version"))
				if err := confirm(ctx, *yes, what, "atelier gadget delete "+name); err != nil {
					return err
				}
				if _, err := g.Call(ctx, "delete").Await(ctx); err != nil {
					return gadgetError(c, err, name)
				}
				fmt.Fprintf(stdio(ctx).out, "Deleted gadget %s with its state and %s.\n", name, plural(len(info.Versions), "version"))
				return nil
			}
		},
	}
}

// plural renders n things: "1 version", "3 versions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func gadgetRenameCommand() command {
	return command{
		name:    "rename",
		usage:   "OLD NEW",
		summary: "rename a gadget (its state, versions and bindings stay)",
		details: `Gives the gadget a new name; its state, versions, grants and bindings stay. Needs the build
role. Clients must reach it under the new name from now on.

Example:
  atelier gadget rename todo chores`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want the gadget's name and its new name"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := ws.Call(ctx, "gadget", args[0]).Call(ctx, "rename", args[1]).Await(ctx); err != nil {
					return gadgetError(c, err, args[0])
				}
				fmt.Fprintf(stdio(ctx).out, "Renamed gadget %s to %s.\n", args[0], args[1])
				return nil
			}
		},
	}
}

// findWorkspace connects and finds the caller's workspace with the ID or name key.
func findWorkspace(ctx context.Context, server, key string) (*client, workspaceInfo, error) {
	c, err := connect(ctx, server)
	if err != nil {
		return nil, workspaceInfo{}, err
	}
	w, err := resolveWorkspace(ctx, c, key)
	if err != nil {
		c.Close()
		return nil, workspaceInfo{}, err
	}
	return c, w, nil
}

// resolveWorkspace finds the caller's workspace with the ID or name key (empty: the current
// one of `atelier workspace use`).
func resolveWorkspace(ctx context.Context, c *client, key string) (workspaceInfo, error) {
	if key == "" {
		key = c.saved().Workspace
	}
	if key == "" {
		return workspaceInfo{}, fmt.Errorf("no workspace selected: pass --workspace ID|NAME, or choose one with `atelier workspace use`")
	}
	ws, err := await[[]workspaceInfo](ctx, c, c.api.Call(ctx, "listWorkspaces"))
	if err != nil {
		return workspaceInfo{}, err
	}
	return pickWorkspace(ws, key)
}

func workspaceDeleteCommand() command {
	return command{
		name:    "delete",
		usage:   "[--server URL] [--yes] ID|NAME",
		summary: "delete a workspace with all its gadgets and their state",
		details: `Deletes the workspace with this ID (or this name, if only one of your workspaces has it),
every gadget in it with its state, its chats, share links and schedules. Only its owner may.
Asks for a confirmation on the terminal; --yes skips it (and is needed when standard input is
not a terminal, as in scripts).

Examples:
  atelier workspace delete lab
  atelier workspace delete --yes ws_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			yes := yesFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the ID or name of the workspace to delete (see `atelier workspace list`)"}
				}
				c, w, err := findWorkspace(ctx, *server, args[0])
				if err != nil {
					return err
				}
				defer c.Close()
				what := fmt.Sprintf("delete workspace %s (%s) with all its gadgets and their state", w.Name, w.ID)
				if err := confirm(ctx, *yes, what, "atelier workspace delete "+args[0]); err != nil {
					return err
				}
				if _, err := c.api.Call(ctx, "openWorkspace", w.ID).Call(ctx, "delete").Await(ctx); err != nil {
					return roleError(c, err)
				}
				out := stdio(ctx).out
				fmt.Fprintf(out, "Deleted workspace %s (%s).\n", w.Name, w.ID)
				if c.saved().Workspace == w.ID {
					if err := c.remember(func(e *serverCredentials) { e.Workspace = "" }); err != nil {
						return err
					}
					fmt.Fprintln(out, "It was the current workspace: pick another with `atelier workspace list` and `atelier workspace use ID`.")
				}
				return nil
			}
		},
	}
}

func workspaceRenameCommand() command {
	return command{
		name:    "rename",
		usage:   "[--server URL] ID|NAME NEW",
		summary: "rename a workspace",
		details: `Gives the workspace with this ID (or this name, if only one of your workspaces has it) a new
name; its ID stays. Needs the build role.

Example:
  atelier workspace rename lab experiments`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want the workspace's ID or name and its new name"}
				}
				c, w, err := findWorkspace(ctx, *server, args[0])
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := c.api.Call(ctx, "openWorkspace", w.ID).Call(ctx, "rename", args[1]).Await(ctx); err != nil {
					return roleError(c, err)
				}
				fmt.Fprintf(stdio(ctx).out, "Renamed workspace %s (%s) to %s.\n", w.Name, w.ID, args[1])
				return nil
			}
		},
	}
}

// joinPath starts the fragment of a share link: #/join/WORKSPACE/KEY (see shareLinkURL).
const joinPath = "/join/"

// shareLinkURL is the address of the workshop at server (the API URL) that redeems the share
// key of workspace id when a signed-in user opens it, as the workshop's Sharing screen shows it.
func shareLinkURL(server, id, key string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path = strings.TrimSuffix(u.Path, "/api") + "/"
	u.Fragment = ""
	return u.String() + "#" + joinPath + url.PathEscape(id) + "/" + url.PathEscape(key)
}

// parseShareLink returns the workspace ID and key of a share link made by shareLinkURL.
func parseShareLink(link string) (id, key string, err error) {
	_, frag, found := strings.Cut(link, "#")
	rest, isJoin := strings.CutPrefix(frag, joinPath)
	id, key, two := strings.Cut(rest, "/")
	if !found || !isJoin || !two || id == "" || key == "" {
		return "", "", usageError{fmt.Sprintf("%q is not a share link like http://HOST:PORT/#/join/WORKSPACE/KEY", link)}
	}
	if id, err = url.PathUnescape(id); err == nil {
		key, err = url.PathUnescape(key)
	}
	if err != nil {
		return "", "", usageError{fmt.Sprintf("share link %q: %v", link, err)}
	}
	return id, key, nil
}

func workspaceJoinCommand() command {
	return command{
		name:    "join",
		usage:   "[--server URL] LINK",
		summary: "join a workspace through a share link and make it the current one",
		details: `Redeems a share link ('atelier share create' prints one; the workshop shows the same link):
you become a collaborator of its workspace with the link's role, and it becomes your current
workspace. The link must come from the server you are logged in to (--server). Links that were
revoked are refused: ask the owner for a new one.

Example:
  atelier workspace join 'http://127.0.0.1:8787/#/join/ws_3k2x.../atl_...'`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the share link"}
				}
				id, key, err := parseShareLink(args[0])
				if err != nil {
					return err
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				w, err := capnweb.AwaitAs[workspaceInfo](ctx, c.api.Call(ctx, "openWorkspace", id, key).Call(ctx, "info"))
				if errorCode(err) == "FORBIDDEN" && strings.Contains(errorMessage(err), "share key is not valid") {
					return fmt.Errorf("%w\nAsk the workspace's owner for a new link (`atelier share create`)", c.explain(err))
				}
				if err != nil {
					return c.explain(err)
				}
				if err := c.remember(func(e *serverCredentials) { e.Workspace = w.ID }); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Joined workspace %s (%s) of %s with the role %s; it is now the current workspace.\n", w.Name, w.ID, w.Owner, w.Role)
				return nil
			}
		},
	}
}
