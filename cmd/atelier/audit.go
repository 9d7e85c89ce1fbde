package main

import (
	"context"
	"flag"
	"fmt"

	"atelier/capnweb"
	"atelier/host/store"
)

// auditMax is the most audit lines one auditLog call returns (docs/api.md, "Kernel notes").
const auditMax = 1000

func auditCommand() command {
	return command{
		name:    "audit",
		usage:   "[--limit N] [--before SEQ] [--actor WHO] [--action PREFIX] [--json]",
		summary: "show the audit log of the current workspace, newest first",
		details: `Prints the audit log of the current workspace (see 'atelier workspace use', or pass
--workspace ID), newest first: every change to it, who made it (a user, owner/agent:NAME,
gadget:NAME, scheduler, ...), what and on what. Needs the build role.

--actor keeps the lines of one actor, --action those whose action starts with PREFIX
(gadget.delete, or gadget. for every gadget change), --before SEQ those older than line SEQ: the
next page after a page ending at SEQ. The server filters the whole retained log; --limit
(default 100, at most 1000) bounds one page.

Examples:
  atelier audit
  atelier audit --limit 20 --actor bob
  atelier audit --action collaborator.
  atelier audit --before 120 --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			limit := fs.Int("limit", 100, fmt.Sprintf("print at most this many lines (1-%d)", auditMax))
			before := fs.Uint64("before", 0, "only lines older than this sequence number (the SEQ column)")
			actor := fs.String("actor", "", "only the lines of this actor (ada, ada/agent:helper, gadget:todo, ...)")
			action := fs.String("action", "", "only the lines whose action starts with this (gadget.delete, share., ...)")
			asJSON := fs.Bool("json", false, "print the lines as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"audit takes no arguments (filters: --actor, --action, --before)"}
				}
				if *limit < 1 || *limit > auditMax {
					return usageError{fmt.Sprintf("--limit %d: want 1 to %d", *limit, auditMax)}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				filter := map[string]any{"before": *before, "actor": *actor, "action": *action}
				out, err := capnweb.AwaitAs[[]store.AuditEntry](ctx, ws.Call(ctx, "auditLog", *limit, filter))
				if err != nil {
					return roleError(c, err)
				}
				std := stdio(ctx)
				if err := printList(std.out, out, *asJSON, "No audit lines match.", "SEQ\tTIME\tACTOR\tACTION\tTARGET\tDETAIL",
					func(l store.AuditEntry) string {
						return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", l.Seq, formatTime(l.Time, "2006-01-02 15:04:05"), l.Actor, l.Action, l.Target, l.Detail)
					}); err != nil {
					return err
				}
				if n := len(out); n == *limit && !*asJSON && out[n-1].Seq > 1 {
					fmt.Fprintf(std.err, "Older lines: add --before %d.\n", out[n-1].Seq)
				}
				return nil
			}
		},
	}
}
