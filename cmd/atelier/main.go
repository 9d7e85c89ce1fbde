// Command atelier is the one Atelier binary: it serves gadgets and gatekeepers, inspects
// components, talks to a running server as a client, and runs the tools around them. Run
// `atelier help` for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one subcommand of the atelier binary, or a group of subcommands.
type command struct {
	name    string
	usage   string // the arguments after the command name
	summary string // one line for `atelier help`
	details string // the long help, after the usage line
	// flags defines the command's flags on fs and returns the action that runs it with the
	// positional arguments. Nil for a group.
	flags func(fs *flag.FlagSet) func(ctx context.Context, args []string) error
	// subcommands makes the command a group: `atelier NAME SUB ...` runs one of them. A group
	// with flags runs its own action when no subcommand is named (`atelier admin quota`).
	subcommands []command
}

// commands lists every subcommand in the order `atelier help` shows them.
func commands() []command {
	return []command{
		serveCommand(), loginCommand(), logoutCommand(), workspaceCommand(), gadgetCommand(),
		gatekeeperCommand(), clusterCommand(), adminCommand(), execCommand(), inspectCommand(), newCommand(), buildCommand(), bindgenCommand(), versionCommand(),
	}
}

func main() {
	// Wasmtime captures a slow Rust backtrace on every error when this is set.
	os.Unsetenv("RUST_BACKTRACE")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// streams are the standard streams of one run of the binary. Commands reach them through
// their context (stdio), so that tests can run commands in-process.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

type streamsKey struct{}

// stdio returns the streams of the run that ctx belongs to (the process's own by default).
func stdio(ctx context.Context) streams {
	if s, ok := ctx.Value(streamsKey{}).(streams); ok {
		return s
	}
	return streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}
}

// run executes the command line args and returns the process exit code: 0 on success, 1 when
// the command failed, 2 when the command line was wrong.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx = context.WithValue(ctx, streamsKey{}, streams{in: stdin, out: stdout, err: stderr})
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, path, rest := resolve(commands(), args[1:]); c != nil && len(rest) == 0 {
				printCommandHelp(stdout, path, *c)
				return 0
			}
			fmt.Fprintf(stderr, "atelier help: unknown command %q\n", strings.Join(args[1:], " "))
			return 2
		}
		printHelp(stdout)
		return 0
	}
	c, path, rest := resolve(commands(), args)
	if c == nil {
		fmt.Fprintf(stderr, "atelier: unknown command %q\nRun 'atelier help' for the list of commands.\n", args[0])
		return 2
	}
	if c.subcommands != nil && c.flags == nil {
		if len(rest) > 0 && rest[0] != "-h" && rest[0] != "--help" {
			fmt.Fprintf(stderr, "atelier %s: unknown subcommand %q\n\n", path, rest[0])
			printCommandHelp(stderr, path, *c)
			return 2
		}
		printCommandHelp(stdout, path, *c)
		return 0
	}
	fs := flag.NewFlagSet("atelier "+path, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printCommandHelp(stderr, path, *c) }
	action := c.flags(fs)
	positional, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := action(ctx, positional); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "atelier %s: %v\n", path, err)
			fmt.Fprintf(stderr, "Usage: atelier %s %s\n", path, c.usage)
			return 2
		}
		fmt.Fprintf(stderr, "atelier %s: %v\n", path, err)
		return 1
	}
	return 0
}

// resolve finds the command that args name, descending into groups as long as the next
// argument names a subcommand. It returns the command (nil if args[0] names none), its path
// ("gadget deploy") and the arguments after it.
func resolve(cs []command, args []string) (*command, string, []string) {
	var found *command
	var path []string
	for len(args) > 0 {
		next := findCommand(cs, args[0])
		if next == nil {
			break
		}
		found, path, args = next, append(path, next.name), args[1:]
		if next.subcommands == nil {
			break
		}
		cs = next.subcommands
	}
	return found, strings.Join(path, " "), args
}

func findCommand(cs []command, name string) *command {
	for i := range cs {
		if cs[i].name == name {
			return &cs[i]
		}
	}
	return nil
}

// parseInterspersed parses flags that may come before, between or after the positional
// arguments (`gadget deploy todo todo.wasm --grant ...`) and returns the positional ones. An
// argument `--` ends the flags: everything after it is positional, even if it starts with '-'.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// usageError marks an error in the command line rather than in the work it asked for.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Atelier runs untrusted WebAssembly gadgets and gatekeepers with only the capabilities their
owners granted, keeps their state durable, and serves them to browsers and agents over Cap'n Web.

Usage: atelier <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Getting started:
  atelier serve --data ./atelier.db                  (in one terminal)
  atelier login --signup                             (asks for a username and a password)
  atelier workspace create home
  atelier gadget deploy todo todo.wasm --grant atelier:host/kv,atelier:host/log,atelier:host/events
  atelier gadget call todo add '"buy milk"'

Client commands authenticate with the login 'atelier login' saved, or with $ATELIER_TOKEN when
it is set (an agent's token, or the admin token 'atelier serve' printed on its first run).

Run 'atelier help <command>' or 'atelier <command> --help' for a command's flags.
`)
}

func printCommandHelp(w io.Writer, path string, c command) {
	if c.subcommands != nil && c.flags == nil {
		fmt.Fprintf(w, "Usage: atelier %s <subcommand> [flags] [arguments]\n\n%s\n\nSubcommands:\n", path, c.details)
		for _, s := range c.subcommands {
			fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(w, "\nRun 'atelier help %s <subcommand>' for a subcommand's flags.\n", path)
		return
	}
	fmt.Fprintf(w, "Usage: atelier %s %s\n\n%s\n", path, c.usage, c.details)
	if c.subcommands != nil {
		fmt.Fprint(w, "\nSubcommands:\n")
		for _, s := range c.subcommands {
			fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
		}
	}
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	c.flags(fs)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
