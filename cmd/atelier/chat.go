package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"atelier/host/kernel"
)

func chatCommand() command {
	return command{
		name:    "chat",
		usage:   "[WORKSPACE] [--model ID] [--chat ID] [--verbose] [--json]",
		summary: "chat with the workspace's agent in the terminal",
		details: `Starts a chat in WORKSPACE (default: the current workspace) with the model --model (default:
the first of 'atelier models list'), or goes on with the chat --chat ID. Each line you type is
a message; the agent's reply streams as it comes, its tool calls show as one-line summaries
(with their output under --verbose). When the agent proposes a change to gadgets, its diff is
shown and you are asked "accept this draft? [y/N]": y deploys it as a new version named after
the chat, anything else rejects it. A dry run of Code Mode shows what it would change and asks
"commit? [y/N]"; a connection request lists your accounts of the gatekeeper by number.

Lines typed while the agent works wait until it is done. End of input (Ctrl-D) ends the chat
once the agent is done; Ctrl-C ends it at once, stopping the agent first if it is working.

--json prints every event of the chat as one JSON object per line (the ChatEvent of
docs/agent.md) instead of text, for scripts; questions then go to standard error.

Examples:
  atelier chat home --model mdl_1
  atelier chat --chat ch_3 --verbose
  printf 'make me a to-do gadget\ny\n' | atelier chat home`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			model := fs.String("model", "", "ID of the model of a new chat (default: the first one listed)")
			chat := fs.String("chat", "", "ID of a chat to go on with (default: start a new chat)")
			verbose := fs.Bool("verbose", false, "print tool calls' output")
			asJSON := fs.Bool("json", false, "print the chat's events as JSON, one per line")
			return func(ctx context.Context, args []string) error {
				if len(args) > 1 {
					return usageError{"want at most one workspace"}
				}
				if *chat != "" && *model != "" {
					return usageError{"--model picks the model of a new chat; --chat goes on with a chat that has one"}
				}
				if len(args) == 1 {
					*workspace = args[0]
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				s, err := newChatSession(ctx, c, ws, *verbose, *asJSON)
				if err != nil {
					return err
				}
				if *chat == "" {
					if *model, err = pickModel(ctx, c, *model); err != nil {
						return err
					}
				}
				return s.run(ctx, *chat, *model)
			}
		},
	}
}

// pickModel returns id, or the first model listed when id is "".
func pickModel(ctx context.Context, c *client, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	models, err := await[[]struct {
		ID string `json:"id"`
	}](ctx, c, c.api.Call(ctx, "listModels"))
	if err != nil {
		return "", err
	}
	if len(models) == 0 {
		return "", fmt.Errorf("no models to chat with: add one (atelier models add, or the workshop's Models page)")
	}
	return models[0].ID, nil
}

func chatsCommand() command {
	return command{
		name:    "chats",
		usage:   "[WORKSPACE] [--json]",
		summary: "list the chats of a workspace",
		details: `Lists the chats of WORKSPACE (default: the current workspace), newest first. Go on with
one with 'atelier chat --chat ID'.`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server, workspace := serverFlag(fs), workspaceFlag(fs)
			asJSON := fs.Bool("json", false, "print the chats as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) > 1 {
					return usageError{"want at most one workspace"}
				}
				if len(args) == 1 {
					*workspace = args[0]
				}
				c, ws, err := gadgetClient(ctx, *server, *workspace)
				if err != nil {
					return err
				}
				defer c.Close()
				chats, err := await[[]kernel.ChatInfo](ctx, c, ws.Call(ctx, "listChats"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, chats, *asJSON, "No chats yet: start one with `atelier chat`.", "ID\tTITLE\tMODEL\tBY\tUPDATED\tSTATE",
					func(ch kernel.ChatInfo) string {
						return strings.Join([]string{ch.ID, clean(ch.Title), orDash(ch.ModelID), ch.Creator, formatTime(ch.Updated, "2006-01-02 15:04"), chatState(ch)}, "\t")
					})
			}
		},
	}
}

// chatState says what a chat is doing.
func chatState(ch kernel.ChatInfo) string {
	switch {
	case ch.Running:
		return "running"
	case ch.Waiting != "":
		return "waits for " + ch.Waiting
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
