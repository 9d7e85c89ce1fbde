// Command atelier is the one Atelier binary: it serves gadgets and gatekeepers, inspects
// components and runs the tools around them. Run `atelier help` for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand of the atelier binary.
type command struct {
	name    string
	usage   string // the arguments after the command name
	summary string // one line for `atelier help`
	details string // the long help, after the usage line
	flags   func(fs *flag.FlagSet) func(ctx context.Context, args []string) error
}

// commands lists every subcommand in the order `atelier help` shows them.
func commands() []command {
	return []command{serveCommand(), deployCommand(), callCommand(), gadgetsCommand(), inspectCommand(), versionCommand()}
}

func main() {
	// Wasmtime captures a slow Rust backtrace on every error when this is set.
	os.Unsetenv("RUST_BACKTRACE")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit code: 0 on success, 1 when
// the command failed, 2 when the command line was wrong.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := findCommand(args[1]); ok {
				printCommandHelp(stdout, c)
				return 0
			}
		}
		printHelp(stdout)
		return 0
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "atelier: unknown command %q\nRun 'atelier help' for the list of commands.\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("atelier "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printCommandHelp(stderr, c) }
	action := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := action(ctx, fs.Args()); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "atelier %s: %v\n", c.name, err)
			fmt.Fprintf(stderr, "Usage: atelier %s %s\n", c.name, c.usage)
			return 2
		}
		fmt.Fprintf(stderr, "atelier %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// usageError marks an error in the command line rather than in the work it asked for.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

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
Run 'atelier help <command>' or 'atelier <command> --help' for a command's flags.
`)
}

func printCommandHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "Usage: atelier %s %s\n\n%s\n", c.name, c.usage, c.details)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
