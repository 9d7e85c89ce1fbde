package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"atelier/host/kernel"
)

func adminInstructionsCommand() command {
	return command{
		name:    "instructions",
		usage:   "[--server URL]",
		summary: "show the instructions every agent of the server gets, or replace them with 'set'",
		details: `Prints the admin's instructions, which go into the system prompt of every chat's agent on
the server (docs/agent.md). Every user may read them; only the admin sets them.

Examples:
  atelier admin instructions
  atelier admin instructions set policy.md
  echo "Answer in French." | atelier admin instructions set -`,
		subcommands: []command{adminInstructionsSetCommand()},
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"admin instructions takes no arguments (to change them: atelier admin instructions set FILE)"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				text, err := await[string](ctx, c, c.api.Call(ctx, "getAgentInstructions"))
				if err != nil {
					return err
				}
				if text == "" {
					text = "No agent instructions set: the admin sets them with `atelier admin instructions set FILE`."
				}
				if !strings.HasSuffix(text, "\n") {
					text += "\n"
				}
				_, err = io.WriteString(stdio(ctx).out, text)
				return err
			}
		},
	}
}

func adminInstructionsSetCommand() command {
	return command{
		name:    "set",
		usage:   "[--server URL] FILE",
		summary: "replace the instructions every agent gets (admin only)",
		details: fmt.Sprintf(`Replaces the agent instructions with the text of FILE ("-": standard input), at most %d
bytes of UTF-8. An empty file removes them.

Examples:
  atelier admin instructions set policy.md
  atelier admin instructions set - < policy.md`, kernel.MaxAgentInstructions),
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the file of the instructions (\"-\": standard input)"}
				}
				r := stdio(ctx).in
				if args[0] != "-" {
					f, err := os.Open(args[0])
					if err != nil {
						return fmt.Errorf("read the instructions: %w", err)
					}
					defer f.Close()
					r = f
				}
				b, err := io.ReadAll(io.LimitReader(r, kernel.MaxAgentInstructions+1))
				if err != nil {
					return fmt.Errorf("read the instructions: %w", err)
				}
				if len(b) > kernel.MaxAgentInstructions {
					return fmt.Errorf("the instructions in %s are over %d bytes; shorten them", args[0], kernel.MaxAgentInstructions)
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := await[any](ctx, c, c.api.Call(ctx, "setAgentInstructions", string(b))); err != nil {
					return err
				}
				msg := fmt.Sprintf("agent instructions set (%d bytes)", len(b))
				if len(b) == 0 {
					msg = "agent instructions removed"
				}
				_, err = fmt.Fprintln(stdio(ctx).out, msg)
				return err
			}
		},
	}
}
