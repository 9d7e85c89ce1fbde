package main

import (
	"context"
	"flag"
	"fmt"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// roles lists the roles a collaborator or a share link may give, in the words of --role's help.
const roles = "build (deploy and change gadgets) or use (list, call and watch them)"

func collaboratorCommand() command {
	return command{
		name:    "collaborator",
		summary: "list, add and remove the people a workspace is shared with",
		details: `Shares the current workspace (see 'atelier workspace use', or pass --workspace ID) with other
users of the server. Roles: owner > build > use. "use" may list, call and watch gadgets; "build"
also deploys, changes and deletes them and reads the audit log; only the owner shares the
workspace and deletes it. Adding someone who is a collaborator already changes their role.
'atelier share' makes links that add whoever opens them.

Examples:
  atelier collaborator list
  atelier collaborator add bob --role build
  atelier collaborator add bob --role use
  atelier collaborator remove bob`,
		subcommands: []command{collaboratorListCommand(), collaboratorAddCommand(), collaboratorRemoveCommand()},
	}
}

func collaboratorListCommand() command {
	return command{
		name:    "list",
		usage:   "[--json]",
		summary: "list the collaborators of the current workspace and their roles",
		details: `Lists the users the workspace is shared with (its owner not included) and their roles.

Examples:
  atelier collaborator list
  atelier collaborator list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"collaborator list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				cs, err := await[[]kernel.CollaboratorInfo](ctx, c, ws.Call(ctx, "listCollaborators"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, cs, *asJSON,
					"The workspace is not shared: add someone with `atelier collaborator add USER --role use`, or make a link with `atelier share create`.",
					"USER\tROLE", func(c kernel.CollaboratorInfo) string { return fmt.Sprintf("%s\t%s", c.Username, c.Role) })
			}
		},
	}
}

func collaboratorAddCommand() command {
	return command{
		name:    "add",
		usage:   "[--role build|use] USER",
		summary: "share the current workspace with a user, or change their role (owner only)",
		details: `Makes USER (a username on this server) a collaborator of the workspace with the role --role:
` + roles + `.
For someone who is a collaborator already, it changes the role. Only the workspace's owner may.

Examples:
  atelier collaborator add bob --role use
  atelier collaborator add bob --role build`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			role := fs.String("role", "use", "the collaborator's role: "+roles)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the username of the collaborator"}
				}
				user := args[0]
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				before, err := await[[]kernel.CollaboratorInfo](ctx, c, ws.Call(ctx, "listCollaborators"))
				if err != nil {
					return err
				}
				_, err = ws.Call(ctx, "addCollaborator", user, *role).Await(ctx)
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("there is no user %q on %s: check the spelling (usernames are lowercase), or ask them to sign up first", user, c.server)
				}
				if err != nil {
					return roleError(c, err)
				}
				out := stdio(ctx).out
				for _, b := range before {
					if b.Username == user {
						fmt.Fprintf(out, "Changed %s's role from %s to %s.\n", user, b.Role, *role)
						return nil
					}
				}
				fmt.Fprintf(out, "Added %s as a collaborator with the role %s.\n", user, *role)
				return nil
			}
		},
	}
}

func collaboratorRemoveCommand() command {
	return command{
		name:    "remove",
		usage:   "USER",
		summary: "stop sharing the current workspace with a user (owner only)",
		details: `Removes USER from the workspace's collaborators: their open connections to it fail from their
next call. Only the workspace's owner may.

Example:
  atelier collaborator remove bob`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the username of the collaborator (see `atelier collaborator list`)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = ws.Call(ctx, "removeCollaborator", args[0]).Await(ctx)
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("%s is not a collaborator of this workspace: run `atelier collaborator list` to see who is", args[0])
				}
				if err != nil {
					return roleError(c, err)
				}
				fmt.Fprintf(stdio(ctx).out, "Removed %s from the workspace's collaborators.\n", args[0])
				return nil
			}
		},
	}
}

func shareCommand() command {
	return command{
		name:    "share",
		summary: "share links of a workspace, and what collaborators must be able to read themselves",
		details: `A share link adds whoever opens it (signed in to this server) to the current workspace as a
collaborator with the link's role: in the workshop, or with 'atelier workspace join LINK'.
Links do not expire; revoking one also removes the collaborators who joined through it. Only
the workspace's owner manages links.

` + observerNote + `

Examples:
  atelier share create --role use
  atelier share list
  atelier share revoke sl_3k2x...
  atelier share require use notes.notebook
  atelier share requirements
  atelier share satisfy notes.notebook https://notes.example.com/notebooks/work`,
		subcommands: []command{shareCreateCommand(), shareListCommand(), shareRevokeCommand(),
			shareRequireCommand(), shareRequirementsCommand(), shareSatisfyCommand()},
	}
}

// shareLink is a new share link as `share create --json` prints it.
type shareLink struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Key  string `json:"key"`
	URL  string `json:"url"`
}

func shareCreateCommand() command {
	return command{
		name:    "create",
		usage:   "[--role build|use] [--json]",
		summary: "make a share link for the current workspace and print it (owner only)",
		details: `Makes a share link that adds whoever opens it as a collaborator with the role --role:
` + roles + `.
The link is printed once (the server keeps only a hash of its key): send it to the people you
share with; they open it in the workshop or run 'atelier workspace join LINK'. 'atelier share
revoke ID' ends it.

Examples:
  atelier share create --role use
  atelier share create --role build --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			role := fs.String("role", "use", "the role the link gives: "+roles)
			asJSON := fs.Bool("json", false, "print {id, role, key, url} as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"share create takes no arguments (the role: --role build|use)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				id, err := capnweb.AwaitAs[string](ctx, ws.Call(ctx, "info").Get("id"))
				if err != nil {
					return roleError(c, err)
				}
				l, err := capnweb.AwaitAs[shareLink](ctx, ws.Call(ctx, "createShareLink", *role))
				if err != nil {
					return roleError(c, err)
				}
				l.Role, l.URL = *role, shareLinkURL(c.server, id, l.Key)
				out := stdio(ctx).out
				if *asJSON {
					return printJSON(out, l)
				}
				fmt.Fprintf(out, "Share link %s: whoever opens it, signed in, joins the workspace with the role %s (shown once):\n%s\n", l.ID, l.Role, l.URL)
				fmt.Fprintf(out, "From the CLI: atelier workspace join '%s'\n", l.URL)
				return nil
			}
		},
	}
}

func shareListCommand() command {
	return command{
		name:    "list",
		usage:   "[--json]",
		summary: "list the live share links of the current workspace (owner only)",
		details: `Lists the workspace's share links that were not revoked: ID, role and when each was made (the
links themselves were shown once, at creation).

Examples:
  atelier share list
  atelier share list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"share list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				ls, err := capnweb.AwaitAs[[]kernel.ShareLinkInfo](ctx, ws.Call(ctx, "listShareLinks"))
				if err != nil {
					return roleError(c, err)
				}
				return printList(stdio(ctx).out, ls, *asJSON,
					"No share links: make one with `atelier share create --role use`.",
					"ID\tROLE\tCREATED", func(l kernel.ShareLinkInfo) string {
						return fmt.Sprintf("%s\t%s\t%s", l.ID, l.Role, formatTime(l.Created, "2006-01-02 15:04:05"))
					})
			}
		},
	}
}

func shareRevokeCommand() command {
	return command{
		name:    "revoke",
		usage:   "ID",
		summary: "end a share link and remove the collaborators who joined through it (owner only)",
		details: `Revokes the share link with this ID (see 'atelier share list'): it stops working, and the
collaborators who joined through it lose access (their open connections fail from their next
call).

Example:
  atelier share revoke sl_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the ID of the share link (see `atelier share list`)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = ws.Call(ctx, "revokeShareLink", args[0]).Await(ctx)
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("this workspace has no share link %s: run `atelier share list` to see its links", args[0])
				}
				if err != nil {
					return roleError(c, err)
				}
				fmt.Fprintf(stdio(ctx).out, "Revoked share link %s; whoever joined through it lost access.\n", args[0])
				return nil
			}
		},
	}
}
