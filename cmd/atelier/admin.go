package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/quota"
)

func adminCommand() command {
	return command{
		name:    "admin",
		summary: "change the server's settings as its admin (quotas, agent instructions)",
		details: `Commands for the server's admin user (the token 'atelier serve' printed on its first run,
or 'atelier login' as admin). Everyone else is refused.

Examples:
  atelier admin quota
  atelier admin quota set stored_bytes 2GiB
  atelier admin instructions set policy.md
  ATELIER_TOKEN=atl_... atelier admin password`,
		subcommands: []command{adminQuotaCommand(), adminInstructionsCommand(), adminPasswordCommand()},
	}
}

func adminQuotaCommand() command {
	names := quota.Names()
	return command{
		name:    "quota",
		usage:   "[--server URL] [--json]",
		summary: "list the quotas in force, or change one with 'set' (admin only)",
		details: `Lists every quota: its scope (what one user owns, one workspace's live use, or the whole
server's), the value in force and the default. docs/security.md, "Quotas", says what each bounds.

Examples:
  atelier admin quota
  atelier admin quota --json
  atelier admin quota set gadgets 500
  atelier admin quota set host_memory unlimited`,
		subcommands: []command{adminQuotaSetCommand(names)},
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the quotas as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{fmt.Sprintf("admin quota takes no arguments (to change one: atelier admin quota set NAME VALUE; the quotas are %s)", strings.Join(names, ", "))}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				qs, err := await[[]kernel.QuotaInfo](ctx, c, c.api.Call(ctx, "getQuotas"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, qs, *asJSON, "no quotas", "QUOTA\tSCOPE\tVALUE\tDEFAULT\tBOUNDS", func(q kernel.QuotaInfo) string {
					info, _ := quota.Lookup(q.Name)
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", q.Name, q.Scope, info.Format(q.Value), info.Format(q.Default), q.About)
				})
			}
		},
	}
}

func adminQuotaSetCommand(names []string) command {
	return command{
		name:    "set",
		usage:   "[--server URL] NAME VALUE",
		summary: "change a quota for the whole server at once (admin only)",
		details: fmt.Sprintf(`Sets quota NAME to VALUE: a number, a size such as 512MiB or 2GiB for the quotas that
count bytes, "unlimited", or "default" to restore the default. The change holds from the next
check on every node and is kept in the data file.

The quotas: %s.

Examples:
  atelier admin quota set workspaces 100
  atelier admin quota set stored_bytes 2GiB
  atelier admin quota set calls_per_second unlimited
  atelier admin quota set gadgets default`, strings.Join(names, ", ")),
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want the quota's name and its value"}
				}
				q, ok := quota.Lookup(args[0])
				if !ok {
					return usageError{fmt.Sprintf("no quota %q; the quotas are %s", args[0], strings.Join(names, ", "))}
				}
				v, err := q.Parse(args[1])
				if err != nil {
					return usageError{err.Error()}
				}
				var value any // null restores the default
				if v != 0 {
					value = v
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := await[any](ctx, c, c.api.Call(ctx, "setQuota", q.Name, value)); err != nil {
					return err
				}
				shown := q.Format(v)
				if v == 0 {
					shown = "its default"
				}
				fmt.Fprintf(stdio(ctx).out, "quota %s set to %s\n", q.Name, shown)
				return nil
			}
		},
	}
}

func adminPasswordCommand() command {
	return command{
		name:    "password",
		usage:   "[--server URL] [--current]",
		summary: "set the admin user's password, so that the admin can log in (admin only)",
		details: `Sets the password of the user "admin", so that the admin can 'atelier login --username admin'
and sign in to the workshop. Run it with the admin token 'atelier serve' printed on its first run
in $ATELIER_TOKEN (or logged in as admin). The admin starts without a password; once one is set,
changing it takes the current one too (--current).

The new password (8 to 1024 bytes) is asked twice at a prompt that does not echo, or read from
the first line of standard input when it is not a terminal (with --current: the current password
on the first line, the new one on the second).

Examples:
  ATELIER_TOKEN=atl_... atelier admin password
  printf '%s\n' "$NEW_PASSWORD" | ATELIER_TOKEN=atl_... atelier admin password
  atelier admin password --current`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			current := fs.Bool("current", false, "ask for the admin's current password first (when one is set)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"admin password takes no arguments: it asks for the password (or reads it from standard input)"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				me, err := await[struct{ Username, Kind string }](ctx, c, c.api.Call(ctx, "whoami"))
				if err != nil {
					return err
				}
				if me.Kind != "user" || me.Username != kernel.AdminName {
					return fmt.Errorf("admin password sets the password of the user %q, and you are %s %q: set ATELIER_TOKEN to the admin token 'atelier serve' printed on its first run, or log in as %s",
						kernel.AdminName, me.Kind, me.Username, kernel.AdminName)
				}
				std := stdio(ctx)
				in := bufio.NewReader(std.in)
				const hint = "type it at a terminal, or pipe it in"
				old := ""
				if *current {
					if old, err = askPassword(std, in, "Current password: ", false, hint); err != nil {
						return err
					}
				}
				pw, err := askPassword(std, in, "New password: ", true, hint)
				if err != nil {
					return err
				}
				_, err = capnweb.AwaitAs[any](ctx, c.api.Call(ctx, "changePassword", old, pw))
				switch {
				case err == nil:
				case errorCode(err) == "UNAUTHORIZED" && strings.Contains(errorMessage(err), "old password is wrong") && *current:
					return errors.New("the current password is wrong; run the command again")
				case errorCode(err) == "UNAUTHORIZED" && strings.Contains(errorMessage(err), "old password is wrong"):
					return errors.New("the admin already has a password: to change it, run `atelier admin password --current`, which asks for the current one first")
				default:
					return c.explain(err)
				}
				fmt.Fprintf(std.out, "The password of %s is set: log in with `atelier login --username %s` or in the workshop.\n", kernel.AdminName, kernel.AdminName)
				return nil
			}
		},
	}
}
