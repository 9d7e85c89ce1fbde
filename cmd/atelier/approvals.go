package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"atelier/capnweb"
)

// actionEntry is one line of a workspace's action log (listActions).
type actionEntry struct {
	ID           uint64 `json:"id"`
	Type         string `json:"type"`
	State        string `json:"state"`
	Account      string `json:"account"`
	Gatekeeper   string `json:"gatekeeper,omitempty"` // the gatekeeper's name
	Resource     string `json:"resource"`
	Caller       string `json:"caller"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	Kind         string `json:"kind,omitempty"`
	AutoApproved bool   `json:"autoApproved"`
	Result       string `json:"result,omitempty"`
}

// autoRule is an auto-approval rule as listAutoApprove describes it.
type autoRule struct {
	Gatekeeper string `json:"gatekeeper"`
	Name       string `json:"name"`
	Kind       string `json:"kind"`
}

func approvalsCommand() command {
	return command{
		name:    "approvals",
		summary: "list, approve and reject the gatekeeper actions waiting for you",
		details: `A gatekeeper records every read it makes with your accounts and queues every change for
the account's owner to approve, per workspace (docs/gatekeepers.md). These commands work on
the queue of the current workspace (see 'atelier workspace use', or pass --workspace ID).

Examples:
  atelier approvals list
  atelier approvals approve 2
  atelier approvals reject 3 --reason "wrong board"
  atelier approvals auto add board pin`,
		subcommands: []command{
			approvalsListCommand(), approvalsApproveCommand(), approvalsRejectCommand(), approvalsAutoCommand(),
		},
	}
}

func approvalsListCommand() command {
	return command{
		name:    "list",
		usage:   "[--workspace ID] [--all [--limit N]] [--json]",
		summary: "list the actions waiting for a decision (--all: the whole log)",
		details: `Lists the actions of the workspace that wait for a decision, with the gatekeeper and the
resource each acts on and who caused it. --all lists the newest entries of the whole log
instead: reads (observations) and decided actions too, with their outcome.

Examples:
  atelier approvals list
  atelier approvals list --all --limit 20
  atelier approvals list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			all := fs.Bool("all", false, "list the newest entries of the whole log, not only the pending actions")
			limit := fs.Int("limit", 100, "with --all: how many of the newest entries (1-1000)")
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"approvals list takes no arguments"}
				}
				if *limit < 1 || *limit > 1000 {
					return usageError{fmt.Sprintf("--limit %d: want 1 to 1000", *limit)}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				query := map[string]any{"pending": true}
				if *all {
					query = map[string]any{"limit": *limit}
				}
				entries, err := await[[]actionEntry](ctx, c, ws.Call(ctx, "listActions", query))
				if err != nil {
					return err
				}
				empty := "No actions wait for a decision. (`atelier approvals list --all` shows the whole log.)"
				if *all {
					empty = "The action log is empty: nothing used a gatekeeper account in this workspace yet."
				}
				return printList(stdio(ctx).out, entries, *asJSON, empty,
					"ID\tSTATE\tGATEKEEPER\tRESOURCE\tCALLER\tTITLE", func(e actionEntry) string {
						state := e.State
						if e.AutoApproved {
							state += " (auto)"
						}
						title := e.Title
						if e.Result != "" {
							title += " -> " + oneLine(e.Result, 60)
						}
						return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", e.ID, state, orDash(e.Gatekeeper), e.Resource, e.Caller, title)
					})
			}
		},
	}
}

// actionID parses the ID argument of approve and reject.
func actionID(arg string) (uint64, error) {
	id, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || id == 0 {
		return 0, usageError{fmt.Sprintf("%q is not an action ID: see `atelier approvals list`", arg)}
	}
	return id, nil
}

// explainDecision rewrites the refusal of a decision on action id so that it says what to run.
func explainDecision(c *client, id uint64, err error) error {
	msg := errorMessage(err)
	switch code := errorCode(err); {
	case code == "FAILED_PRECONDITION" && strings.Contains(msg, "not pending"):
		return fmt.Errorf("action %d was already decided (%s): there is nothing to decide; `atelier approvals list --all` shows its outcome", id, msg)
	case code == "FAILED_PRECONDITION" && strings.Contains(msg, "apply action"):
		return fmt.Errorf("action %d failed when the gatekeeper applied it: %s\nIt is recorded as failed: `atelier approvals list --all` shows it", id, msg)
	case code == "NOT_FOUND":
		return fmt.Errorf("%s (NOT_FOUND)\nOnly the owner of the account an action uses decides it: see `atelier approvals list` for the actions of this workspace", msg)
	}
	return c.explain(err)
}

// decidedEntry returns the log entry of action id after a decision (ok false when the log no
// longer holds it).
func decidedEntry(ctx context.Context, c *client, ws *capnweb.Promise, id uint64) (actionEntry, bool, error) {
	es, err := await[[]actionEntry](ctx, c, ws.Call(ctx, "listActions", map[string]any{"before": id + 1, "limit": 1}))
	if err != nil || len(es) == 0 || es[0].ID != id {
		return actionEntry{}, false, err
	}
	return es[0], true, nil
}

func approvalsApproveCommand() command {
	return command{
		name:    "approve",
		usage:   "[--workspace ID] [--json] ID",
		summary: "apply an action waiting for your approval",
		details: `Approves action ID (see 'atelier approvals list'): the server starts the account's gatekeeper
and has it apply the action, then prints the outcome. Only the owner of the account the
action uses decides it.

Examples:
  atelier approvals approve 2
  atelier approvals approve 2 --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the decided entry as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the action's ID (see `atelier approvals list`)"}
				}
				id, err := actionID(args[0])
				if err != nil {
					return err
				}
				return decide(ctx, *server, *workspace, id, *asJSON, "approveAction")
			}
		},
	}
}

func approvalsRejectCommand() command {
	return command{
		name:    "reject",
		usage:   "[--workspace ID] [--reason TEXT] [--json] ID",
		summary: "drop an action waiting for your approval",
		details: `Rejects action ID (see 'atelier approvals list'): it is not applied, and the gatekeeper is
told so. --reason is kept with the entry and in the audit log.

Examples:
  atelier approvals reject 3
  atelier approvals reject 3 --reason "wrong board"`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			reason := fs.String("reason", "", "why, kept with the entry (at most 1 KiB)")
			asJSON := fs.Bool("json", false, "print the decided entry as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the action's ID (see `atelier approvals list`)"}
				}
				id, err := actionID(args[0])
				if err != nil {
					return err
				}
				return decide(ctx, *server, *workspace, id, *asJSON, "rejectAction", *reason)
			}
		},
	}
}

// decide calls method (approveAction or rejectAction) on action id with more arguments, then
// prints the entry as it stands.
func decide(ctx context.Context, server, workspace string, id uint64, asJSON bool, method string, more ...any) error {
	c, ws, err := gadgetClient(ctx, server, workspace)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := capnweb.AwaitAs[any](ctx, ws.Call(ctx, method, append([]any{id}, more...)...)); err != nil {
		return explainDecision(c, id, err)
	}
	e, found, err := decidedEntry(ctx, c, ws, id)
	if err != nil {
		return err
	}
	out := stdio(ctx).out
	if asJSON {
		return printJSON(out, e)
	}
	verb := "Approved"
	if method == "rejectAction" {
		verb = "Rejected"
	}
	if !found {
		_, err = fmt.Fprintf(out, "%s action %d.\n", verb, id)
		return err
	}
	fmt.Fprintf(out, "%s action %d (%s on %s): %s", verb, id, e.Title, e.Resource, e.State)
	if e.Result != "" {
		fmt.Fprintf(out, ": %s", e.Result)
	}
	_, err = fmt.Fprintln(out)
	return err
}

func approvalsAutoCommand() command {
	return command{
		name:    "auto",
		summary: "list, add and remove your auto-approval rules",
		details: `A rule "apply actions of KIND from my accounts on GATEKEEPER without asking" holds in one
workspace. Only kinds the gatekeeper's manifest lists as autoApprovable qualify, and only
the actions the gatekeeper itself marks auto-approvable; adding a rule applies those already
waiting.

Examples:
  atelier approvals auto list
  atelier approvals auto add board pin
  atelier approvals auto remove board pin`,
		subcommands: []command{approvalsAutoListCommand(), approvalsAutoSetCommand("add", true), approvalsAutoSetCommand("remove", false)},
	}
}

func approvalsAutoListCommand() command {
	return command{
		name:    "list",
		usage:   "[--workspace ID] [--json]",
		summary: "list your auto-approval rules in the workspace",
		details: `Lists your rules in the current workspace: the gatekeeper and the kind of action each lets through.

Examples:
  atelier approvals auto list
  atelier approvals auto list --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the rules as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"approvals auto list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				rules, err := await[[]autoRule](ctx, c, ws.Call(ctx, "listAutoApprove"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, rules, *asJSON,
					"No auto-approval rules: every action waits for you. Add one with `atelier approvals auto add GATEKEEPER KIND`.",
					"GATEKEEPER\tKIND\tID", func(r autoRule) string {
						return fmt.Sprintf("%s\t%s\t%s", orDash(r.Name), r.Kind, r.Gatekeeper)
					})
			}
		},
	}
}

func approvalsAutoSetCommand(name string, enabled bool) command {
	summary, details := "let actions of a kind through without asking", `Adds the rule "apply the auto-approvable actions of KIND from my accounts on GATEKEEPER (its
name or ID) without asking" in the current workspace, and applies those already waiting.
'atelier gatekeeper list --json' shows the kinds a gatekeeper allows (autoApprovable).

Example:
  atelier approvals auto add board pin`
	if !enabled {
		summary, details = "ask again for actions of a kind", `Removes the rule for KIND on GATEKEEPER (its name or ID): its actions wait for you again.

Example:
  atelier approvals auto remove board pin`
	}
	return command{
		name:    name,
		usage:   "[--workspace ID] GATEKEEPER KIND",
		summary: summary,
		details: details,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a gatekeeper (name or ID) and a kind of action"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				gk, err := findGatekeeper(ctx, c, args[0])
				if err != nil {
					return err
				}
				if _, err := await[any](ctx, c, ws.Call(ctx, "setAutoApprove", gk.ID, args[1], enabled)); err != nil {
					return err
				}
				if enabled {
					fmt.Fprintf(stdio(ctx).out, "Actions of kind %s from your accounts on %s are applied without asking in this workspace.\n"+
						"`atelier approvals auto remove %s %s` withdraws the rule.\n", args[1], gk.Name, gk.Name, args[1])
				} else {
					fmt.Fprintf(stdio(ctx).out, "Actions of kind %s from your accounts on %s wait for your approval again.\n", args[1], gk.Name)
				}
				return nil
			}
		},
	}
}
