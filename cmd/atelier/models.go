package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"atelier/host/kernel"
)

// maxSecretFile bounds what a key file (or standard input) may hold: a key is a line, and a
// file such as /dev/zero must not fill the client's memory.
const maxSecretFile = 64 << 10

func modelsCommand() command {
	return command{
		name:    "models",
		summary: "list, add and remove the language models your chats' agent uses",
		details: `A model is an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, llama.cpp's server,
vLLM, LM Studio, OpenRouter) or the Anthropic Messages API, with its API key. The key is sealed
in the server's vault and never shown again. The admin adds instance-wide models, which every
user may use (docs/agent.md, "Models").

Examples:
  atelier models add --name gpt --provider openai --model gpt-4o --key-env OPENAI_API_KEY
  atelier models add --name claude --provider anthropic --model claude-sonnet-4-5 --key-file ~/.anthropic-key
  atelier models add --name local --provider openai --url http://127.0.0.1:11434/v1 --model qwen3:4b
  atelier models list
  atelier models remove mdl_3k2x...`,
		subcommands: []command{modelsListCommand(), modelsAddCommand(), modelsRemoveCommand()},
	}
}

func modelsListCommand() command {
	return command{
		name:    "list",
		usage:   "[--server URL] [--json]",
		summary: "list the models you may use: yours and the instance-wide ones",
		details: "Lists your models and the instance-wide ones with their endpoint; KEY says whether one is sealed (it is never shown).",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"models list takes no arguments"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				ms, err := await[[]kernel.ModelInfo](ctx, c, c.api.Call(ctx, "listModels"))
				if err != nil {
					return err
				}
				return printList(stdio(ctx).out, ms, *asJSON,
					"No models yet: add one with `atelier models add` (see `atelier models add --help`).",
					"ID\tNAME\tSCOPE\tPROVIDER\tMODEL\tBASE URL\tCONTEXT\tKEY", func(m kernel.ModelInfo) string {
						window, key := "default", "none"
						if m.ContextWindow > 0 {
							window = strconv.Itoa(m.ContextWindow)
						}
						if m.HasKey {
							key = "sealed"
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", m.ID, m.Name, m.Scope, m.Provider, m.Model, m.BaseURL, window, key)
					})
			}
		},
	}
}

func modelsAddCommand() command {
	return command{
		name:    "add",
		usage:   "[--server URL] --name NAME --provider openai|anthropic --model MODEL [--url URL] [--key-file FILE | --key-env VAR] [--context-window N] [--instance] [--json]",
		summary: "add a model (its key is sealed on the server and never shown again)",
		details: `Adds a model for you, or with --instance (the admin only) for every user of the server.

--provider openai speaks the Chat Completions API, which OpenAI, Ollama, llama.cpp's server,
vLLM, LM Studio and OpenRouter serve; --url is the URL /chat/completions is under (default
https://api.openai.com/v1). --provider anthropic speaks the Messages API (default URL
https://api.anthropic.com).

The API key is read from a file (--key-file, "-" for standard input) or an environment
variable (--key-env), never from the command line, where other users of the machine could
see it. A loopback or private endpoint (Ollama's 127.0.0.1:11434) is refused when the agent
calls it unless the server was started with --model-allow-addr for it.

Examples:
  atelier models add --name gpt --provider openai --model gpt-4o --key-env OPENAI_API_KEY
  pass show anthropic | atelier models add --name claude --provider anthropic --model claude-sonnet-4-5 --key-file -
  atelier models add --name local --provider openai --url http://127.0.0.1:11434/v1 --model qwen3:4b --context-window 32768
  atelier models add --name team-gpt --provider openai --model gpt-4o --key-file key.txt --instance`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			var in kernel.ModelInput
			fs.StringVar(&in.Name, "name", "", "how you tell the model apart in listings and chats (required)")
			fs.StringVar(&in.Provider, "provider", "", `"openai" (any Chat Completions endpoint) or "anthropic" (required)`)
			fs.StringVar(&in.Model, "model", "", "the provider's name of the model, e.g. gpt-4o, claude-sonnet-4-5, qwen3:4b (required)")
			fs.StringVar(&in.BaseURL, "url", "", "the endpoint's base URL (default: the provider's own)")
			fs.IntVar(&in.ContextWindow, "context-window", 0, "the model's context in tokens (default 32768)")
			fs.BoolVar(&in.Instance, "instance", false, "make the model available to every user (admin only)")
			keyFile := fs.String("key-file", "", `read the API key from FILE ("-": standard input)`)
			keyEnv := fs.String("key-env", "", "read the API key from environment variable VAR")
			asJSON := fs.Bool("json", false, "print the model as JSON")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"models add takes flags only (the key comes from --key-file or --key-env)"}
				}
				if in.Name == "" || in.Provider == "" || in.Model == "" {
					return usageError{"--name, --provider and --model are required"}
				}
				key, err := readKey(ctx, *keyFile, *keyEnv)
				if err != nil {
					return err
				}
				in.APIKey = key
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				m, err := await[kernel.ModelInfo](ctx, c, c.api.Call(ctx, "addModel", in))
				if err != nil {
					return err
				}
				if *asJSON {
					return printJSON(stdio(ctx).out, m)
				}
				key = "without a key"
				if m.HasKey {
					key = "key sealed"
				}
				fmt.Fprintf(stdio(ctx).out, "Added %s %s (%s %s at %s, %s) as %s\n", m.Scope, m.Name, m.Provider, m.Model, m.BaseURL, key, m.ID)
				if m.Refused != "" {
					fmt.Fprintf(stdio(ctx).out, "Note: %s.\n", m.Refused)
				}
				return nil
			}
		},
	}
}

// readKey reads the API key from file (standard input for "-") or from the environment
// variable env, trimmed of surrounding space; "" when neither is given.
func readKey(ctx context.Context, file, env string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", usageError{"give --key-file or --key-env, not both"}
	case env != "":
		key, ok := os.LookupEnv(env)
		if !ok || strings.TrimSpace(key) == "" {
			return "", fmt.Errorf("--key-env %s: the variable is not set or empty; export it first", env)
		}
		return strings.TrimSpace(key), nil
	case file == "":
		return "", nil
	}
	r := stdio(ctx).in
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("read the API key: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("read the API key: %w", err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("read the API key from %s: it is over %d bytes; the file should hold the key alone", file, maxSecretFile)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("read the API key from %s: it is empty", file)
	}
	return key, nil
}

func modelsRemoveCommand() command {
	return command{
		name:    "remove",
		usage:   "[--server URL] ID",
		summary: "remove one of your models (an instance-wide one: the admin only)",
		details: "Removes the model with the given ID (as `models list` shows it) and its sealed key; chats that used it need another.",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			server := serverFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want the model's ID"}
				}
				c, err := connect(ctx, *server)
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := await[any](ctx, c, c.api.Call(ctx, "removeModel", args[0])); err != nil {
					return err
				}
				fmt.Fprintf(stdio(ctx).out, "Removed %s\n", args[0])
				return nil
			}
		},
	}
}
