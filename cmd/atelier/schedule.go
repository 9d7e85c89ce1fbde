package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

func scheduleCommand() command {
	return command{
		name:    "schedule",
		summary: "call gadget functions on a schedule: every interval, or once at a time",
		details: `A schedule calls one of a gadget's exported functions with fixed JSON arguments, every
interval (--every, at least 1s) or once (--at a time, or --in a delay), as you: each run has
your authority, checked again before it runs. Schedules belong to the workspace (the current
one, or -w ID) and run while the server runs, whether or not any client is connected; every
run is in the audit log, and 'schedule list' shows the runs and the last error. Needs the
build role.

Examples:
  atelier schedule add todo add '"water the plants"' --every 1d
  atelier schedule add counter increment 1 --every 30s
  atelier schedule add todo add --args '["water the plants"]' --at 2030-01-01T09:00:00Z
  atelier schedule add counter reset --in 10m
  atelier schedule list
  atelier schedule cancel sch_3k2x...`,
		subcommands: []command{scheduleAddCommand(), scheduleListCommand(), scheduleCancelCommand()},
	}
}

// durationWithDays matches a whole number of days ("2d"), which time.ParseDuration lacks.
var durationWithDays = regexp.MustCompile(`^(\d+)d$`)

// parseInterval reads a duration such as 30s, 5m, 1h30m or 2d.
func parseInterval(flagName, v string) (time.Duration, error) {
	s := v
	if m := durationWithDays.FindStringSubmatch(v); m != nil {
		s = m[1] + "h"
	}
	d, err := time.ParseDuration(s)
	if s != v {
		d *= 24
	}
	if err != nil || d <= 0 {
		return 0, usageError{fmt.Sprintf("%s %q is not a positive duration like 30s, 5m, 1h30m or 2d", flagName, v)}
	}
	return d, nil
}

// formatEvery renders a period without trailing zero units: 1h, 1h30m, 90s -> 1m30s.
func formatEvery(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// scheduleWhen describes a schedule's timing for people: "every 1h" or "once".
func scheduleWhen(s kernel.ScheduleInfo) string {
	if s.EveryMs > 0 {
		return "every " + formatEvery(time.Duration(s.EveryMs)*time.Millisecond)
	}
	return "once"
}

// rpcMethod turns a function named as on the command line (WIT or RPC names, INTERFACE.FUNCTION
// inside an exported interface) into the API's name: "api.make-counter" -> "api.makeCounter".
func rpcMethod(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = camelCase(p)
	}
	return strings.Join(parts, ".")
}

// scheduleArgs returns the arguments of a scheduled call: the positional JSON values, or the
// JSON array of --args.
func scheduleArgs(positional []string, argsFlag string) ([]any, error) {
	if argsFlag == "" {
		return parseJSONArgs(positional)
	}
	if len(positional) > 0 {
		return nil, usageError{"give the arguments either after the function or as --args '[...]', not both"}
	}
	var args []any
	if err := json.Unmarshal([]byte(argsFlag), &args); err != nil || args == nil {
		return nil, usageError{fmt.Sprintf("--args %s is not a JSON array: write the arguments like '[1, \"text\"]'", argsFlag)}
	}
	return args, nil
}

func scheduleAddCommand() command {
	return command{
		name:    "add",
		usage:   "(--every DURATION | --at TIME | --in DURATION) [--args JSON-ARRAY] [--json] GADGET FUNCTION [JSON-ARG...]",
		summary: "schedule a call of a gadget's function, periodic or once",
		details: `Calls FUNCTION of GADGET with the given arguments on a schedule, as you. FUNCTION is a WIT
name (make-counter) or an RPC name (makeCounter); a function of an exported interface is
INTERFACE.FUNCTION. The arguments are JSON values after FUNCTION (quote strings: '"text"'), or
one JSON array with --args (at most 16 KiB). The server checks the function and the number of
arguments now.

When, exactly one of:
  --every DURATION  every DURATION (30s, 5m, 1h30m, 2d; at least 1s), the first run one
                    DURATION from now; runs missed while the server was down are not replayed
  --at TIME         once at TIME, RFC 3339 (2030-01-01T09:00:00Z or with an offset, +02:00);
                    a time in the past runs at once
  --in DURATION     once, DURATION from now

Examples:
  atelier schedule add counter increment 5 --every 10s
  atelier schedule add todo add '"buy milk"' --at 2030-01-01T09:00:00+01:00
  atelier schedule add todo add --args '["call the bank"]' --in 2h
  atelier schedule add counter reset --every 1d -w ws_3k2x... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			every := fs.String("every", "", "run every DURATION (30s, 5m, 1h30m, 2d; at least 1s)")
			at := fs.String("at", "", "run once at TIME (RFC 3339, e.g. 2030-01-01T09:00:00Z)")
			in := fs.String("in", "", "run once, DURATION from now (e.g. 10m)")
			argsFlag := fs.String("args", "", `the arguments as one JSON array, e.g. '[1, "text"]' (instead of JSON-ARGs)`)
			asJSON := fs.Bool("json", false, "print the new schedule as JSON: {id, next}")
			return func(ctx context.Context, args []string) error {
				if len(args) < 2 {
					return usageError{"want a gadget name and a function name (see `atelier gadget list`)"}
				}
				callArgs, err := scheduleArgs(args[2:], *argsFlag)
				if err != nil {
					return err
				}
				var spec kernel.ScheduleSpec
				var when string
				switch n := countSet(*every, *at, *in); {
				case n == 0:
					return usageError{"say when with --every DURATION, --at TIME or --in DURATION"}
				case n > 1:
					return usageError{"give only one of --every, --at and --in"}
				case *every != "":
					d, err := parseInterval("--every", *every)
					if err != nil {
						return err
					}
					if d < time.Millisecond {
						return usageError{fmt.Sprintf("--every %s is shorter than a millisecond; schedules run at most every second", *every)}
					}
					spec.EveryMs, when = d.Milliseconds(), "every "+formatEvery(d)
				case *at != "":
					t, err := time.Parse(time.RFC3339Nano, *at)
					if err != nil {
						return usageError{fmt.Sprintf("--at %q is not an RFC 3339 time like 2030-01-01T09:00:00Z or 2030-01-01T09:00:00+02:00", *at)}
					}
					spec.At, when = t.Format(time.RFC3339Nano), "once"
				default:
					d, err := parseInterval("--in", *in)
					if err != nil {
						return err
					}
					spec.At, when = time.Now().Add(d).UTC().Format(time.RFC3339Nano), "once"
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				gadget, method := args[0], rpcMethod(args[1])
				res, err := capnweb.AwaitAs[struct {
					ID   string    `json:"id"`
					Next time.Time `json:"next"`
				}](ctx, ws.Call(ctx, "schedule", gadget, method, callArgs, spec))
				if err != nil {
					return explainSchedule(c, err, gadget, *every)
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, res)
				}
				fmt.Fprintf(stdio(ctx).out, "Scheduled %s.%s %s as %s; next run %s.\nSee it with `atelier schedule list`, stop it with `atelier schedule cancel %s`.\n",
					gadget, method, when, res.ID, formatTime(res.Next, "2006-01-02 15:04:05 MST"), res.ID)
				return nil
			}
		},
	}
}

// countSet counts the non-empty values.
func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// belowMinimum finds the server's minimum period in its refusal of a shorter one.
var belowMinimum = regexp.MustCompile(`below the minimum (\d+)`)

// explainSchedule rewrites a refused schedule call so that it says what to do next.
func explainSchedule(c *client, err error, gadget, every string) error {
	msg := errorMessage(err)
	switch {
	case errorCode(err) == "NOT_FOUND" && strings.Contains(msg, "no exported function"):
		return fmt.Errorf("%s\nThe functions are the component's exports: `atelier inspect FILE.wasm` lists them (camelCase or WIT names, INTERFACE.FUNCTION inside an interface)", msg)
	case errorCode(err) == "NOT_FOUND":
		return fmt.Errorf("%s\nSee the gadgets of this workspace with `atelier gadget list`", msg)
	case errorCode(err) == "INVALID_ARGUMENT" && strings.Contains(msg, "below the minimum"):
		if m := belowMinimum.FindStringSubmatch(msg); m != nil {
			ms, _ := strconv.ParseInt(m[1], 10, 64)
			return fmt.Errorf("--every %s is too short: this server runs a schedule at most every %s; use --every %s or longer",
				every, formatEvery(time.Duration(ms)*time.Millisecond), formatEvery(time.Duration(ms)*time.Millisecond))
		}
		return fmt.Errorf("--every %s is too short: %s", every, msg)
	}
	return c.explain(err)
}

func scheduleListCommand() command {
	return command{
		name:    "list",
		usage:   "[--json]",
		summary: "list the schedules of the current workspace",
		details: `Lists the workspace's schedules: what each calls, when, its next run, its creator, how many
times it ran and the last run's error, if any.

Examples:
  atelier schedule list
  atelier schedule list --json -w ws_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"schedule list takes no arguments"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				ss, err := await[[]kernel.ScheduleInfo](ctx, c, ws.Call(ctx, "listSchedules"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, ss, *asJSON,
					"No schedules in this workspace: add one with `atelier schedule add GADGET FUNCTION --every DURATION`.",
					"ID\tCALL\tWHEN\tNEXT\tRUNS\tLAST RUN\tCREATOR\tLAST ERROR", func(s kernel.ScheduleInfo) string {
						call, _ := json.Marshal(s.Args)
						last, lastErr := "-", "-"
						if !s.LastRun.IsZero() {
							last = formatTime(s.LastRun, "2006-01-02 15:04:05")
						}
						if s.LastError != "" {
							lastErr = oneLine(s.LastError, 80)
						}
						return fmt.Sprintf("%s\t%s.%s %s\t%s\t%s\t%d\t%s\t%s\t%s", s.ID, s.Gadget, s.Method, oneLine(string(call), 40), scheduleWhen(s),
							formatTime(s.Next, "2006-01-02 15:04:05"), s.Runs, last, s.Creator, lastErr)
					})
			}
		},
	}
}

func scheduleCancelCommand() command {
	return command{
		name:    "cancel",
		usage:   "ID",
		summary: "cancel a schedule of the current workspace",
		details: `Deletes the schedule with this ID (see 'atelier schedule list'); a run in progress finishes.
Anyone with the build role in the workspace may cancel any of its schedules.

Example:
  atelier schedule cancel sch_3k2x...`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the ID of a schedule (see `atelier schedule list`)"}
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = capnweb.AwaitAs[any](ctx, ws.Call(ctx, "cancelSchedule", args[0]))
				if errorCode(err) == "NOT_FOUND" {
					return fmt.Errorf("this workspace has no schedule %s: run `atelier schedule list` to see its schedules (or pass -w for another workspace)", args[0])
				}
				if err != nil {
					return c.explain(err)
				}
				fmt.Fprintf(stdio(ctx).out, "Cancelled schedule %s.\n", args[0])
				return nil
			}
		},
	}
}
