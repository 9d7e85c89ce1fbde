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
	"reflect"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// command is one subcommand of the atelier binary, or a group of subcommands.
type command struct {
	name    string
	usage   string // the arguments after the command name
	summary string // one line for `atelier help`
	details string // the long help, after the usage line
	// flags defines the command's flags on fs and returns the action that runs it with the
	// positional arguments. Nil for a group. Cobra parses the flags (fs itself is never
	// parsed: fs.Args and fs.Visit see nothing): they may come before, between or after the
	// positional arguments, "--" ends them, and a one-letter flag defined on the same variable
	// as a long one is its shorthand (-w for --workspace).
	flags func(fs *flag.FlagSet) func(ctx context.Context, args []string) error
	// subcommands makes the command a group: `atelier NAME SUB ...` runs one of them. A group
	// with flags runs its own action when no subcommand is named (`atelier admin quota`).
	subcommands []command
}

// commands lists every subcommand in the order `atelier help` shows them.
func commands() []command {
	return []command{
		serveCommand(), loginCommand(), logoutCommand(), passwordCommand(), workspaceCommand(), gadgetCommand(),
		collaboratorCommand(), shareCommand(), auditCommand(), gatekeeperCommand(), accountCommand(), approvalsCommand(),
		agentCommand(), blueprintCommand(), scheduleCommand(), hookCommand(),
		modelsCommand(), chatCommand(), chatsCommand(), clusterCommand(), adminCommand(),
		execCommand(), inspectCommand(), newCommand(), buildCommand(), bindgenCommand(), versionCommand(),
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
	root := rootCommand(commands(), stdout, stderr)
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	var unknown unknownCommandError
	var usage usageError
	switch {
	case errors.As(err, &unknown) && !cmd.HasParent():
		fmt.Fprintln(stderr, "Run 'atelier help' for the list of commands.")
	case errors.As(err, &unknown):
		fmt.Fprintln(stderr)
		cmd.SetOut(stderr)
		if err := cmd.Help(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		}
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "Usage: %s\n", cmd.UseLine())
	default:
		return 1
	}
	return 2
}

// usageError marks an error in the command line rather than in the work it asked for.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// unknownCommandError is a command line that names no subcommand of a group (or no command).
type unknownCommandError struct{ msg string }

func (e unknownCommandError) Error() string { return e.msg }

func init() {
	// `atelier help` lists the commands in the order of commands(), not sorted.
	cobra.EnableCommandSorting = false
}

// rootCommand builds the cobra command tree of one run from cs (commands()), writing help and
// completion scripts to stdout: the help, the version flag, shell completion and the parsing of
// flags come from cobra.
func rootCommand(cs []command, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use: "atelier <command> [flags] [arguments]",
		Long: `Atelier runs untrusted WebAssembly gadgets and gatekeepers with only the capabilities their
owners granted, keeps their state durable, and serves them to browsers and agents over Cap'n Web.`,
		Example: `Getting started:
  atelier serve --data ./atelier.db                  (in one terminal)
  atelier login --signup                             (asks for a username and a password)
  atelier workspace create home
  atelier gadget deploy todo todo.wasm --grant atelier:host/kv,atelier:host/log,atelier:host/events
  atelier gadget call todo add '"buy milk"'

Client commands authenticate with the login 'atelier login' saved, or with $ATELIER_TOKEN when
it is set (an agent's token, or the admin token 'atelier serve' printed on its first run).`,
		Version:       versionString(),
		RunE:          runGroup,
		Args:          cobra.ArbitraryArgs, // an unknown command reaches runGroup
		SilenceErrors: true,                // run prints them
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetHelpTemplate(helpTemplate)
	root.SetFlagErrorFunc(flagError)
	for _, c := range cs {
		root.AddCommand(cobraCommand(c))
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Run, c.RunE = nil, runHelp
		case "completion":
			c.Args, c.RunE = nil, runGroup
		}
	}
	addBoolFlag(root.Flags(), "version", "v", "print the version of atelier (as 'atelier version' does)")
	var finish func(*cobra.Command)
	finish = func(c *cobra.Command) {
		addBoolFlag(c.Flags(), "help", "h", "help for "+c.Name())
		c.DisableFlagsInUseLine = true // the usage lines say where the flags go
		c.SuggestionsMinimumDistance = 2
		for _, sub := range c.Commands() {
			finish(sub)
		}
	}
	finish(root)
	return root
}

// addBoolFlag defines a bool flag as a Go flag, which pflag shows like the commands' own bool
// flags ("--help", where its own bool flags show "--help[=true|false]"). Cobra uses the help
// and version flags defined here instead of defining its own. A command's own flag of that
// name, or of that shorthand, wins.
func addBoolFlag(flags *pflag.FlagSet, name, shorthand, usage string) {
	if flags.Lookup(name) != nil {
		return
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Bool(name, false, usage)
	pf := pflag.PFlagFromGoFlag(fs.Lookup(name))
	if flags.ShorthandLookup(shorthand) == nil {
		pf.Shorthand = shorthand
	}
	flags.AddFlag(pf)
}

// helpTemplate is the help of every command: the usage line, the details, the subcommands and
// the flags (the root's starts with what Atelier is, and ends with how to get started).
const helpTemplate = `{{if not .HasParent}}{{.Long}}

{{end}}Usage: {{.UseLine}}{{if and .HasParent .Long}}

{{.Long | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

{{if .HasParent}}Subcommands{{else}}Commands{{end}}:{{range .Commands}}{{if or .IsAvailableCommand (eq .Name "help")}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}{{end}}{{if .HasExample}}

{{.Example}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsagesWrapped 100 | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Run '{{if .HasParent}}{{.CommandPath}} <subcommand> --help{{else}}atelier help <command>' or 'atelier <command> --help{{end}}' for its flags and examples.{{end}}
`

// cobraCommand turns c (and its subcommands) into a cobra command: its flags are defined on a
// Go flag set and handed to cobra, and its action runs with the positional arguments.
func cobraCommand(c command) *cobra.Command {
	cc := &cobra.Command{
		Use:   strings.TrimSpace(c.name + " " + c.usage),
		Short: c.summary,
		Long:  c.details,
	}
	if c.flags != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		action := c.flags(fs)
		addGoFlags(cc.Flags(), fs)
		cc.RunE = func(cc *cobra.Command, args []string) error { return action(cc.Context(), args) }
	} else {
		cc.Use = c.name + " <subcommand> [flags] [arguments]"
		cc.RunE = runGroup
	}
	for _, s := range c.subcommands {
		cc.AddCommand(cobraCommand(s))
	}
	return cc
}

// addGoFlags adds the flags of fs to flags. A one-letter flag defined on the same variable as
// a longer one becomes its shorthand (-w for --workspace); one on its own is both -o and --o.
func addGoFlags(flags *pflag.FlagSet, fs *flag.FlagSet) {
	type variable struct {
		typ reflect.Type
		ptr uintptr
	}
	variableOf := func(v flag.Value) (variable, bool) {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			return variable{}, false
		}
		return variable{rv.Type(), rv.Pointer()}, true
	}
	long := map[variable]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := variableOf(f.Value); ok && len(f.Name) > 1 {
			long[v] = f.Name
		}
	})
	shorthand := map[string]string{} // long name → its one-letter alias
	alias := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := variableOf(f.Value); ok && len(f.Name) == 1 && long[v] != "" {
			shorthand[long[v]], alias[f.Name] = f.Name, true
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if alias[f.Name] {
			return
		}
		pf := pflag.PFlagFromGoFlag(f)
		if s, ok := shorthand[f.Name]; ok {
			pf.Shorthand = s
		}
		if typ, _ := flag.UnquoteUsage(f); typ == "value" {
			pf.Value = namedValue{pf.Value, typ} // "--grant value", not the Go type's name
		}
		flags.AddFlag(pf)
	})
}

// namedValue is a flag's value with the name the help shows for its argument.
type namedValue struct {
	pflag.Value
	name string
}

func (v namedValue) Type() string { return v.name }

// runGroup is the action of the root and of a group without an action of its own: alone it
// prints the help; given an argument, that argument names no subcommand.
func runGroup(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return unknownCommandError{unknownSubcommand(c, args[0])}
}

// unknownSubcommand says that name is no subcommand of c, and which ones are close to it.
func unknownSubcommand(c *cobra.Command, name string) string {
	kind := "subcommand"
	if !c.HasParent() {
		kind = "command"
	}
	msg := fmt.Sprintf("unknown %s %q", kind, name)
	if near := c.SuggestionsFor(name); len(near) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	}
	return msg
}

// runHelp is `atelier help [command [subcommand]]`: it prints the help of the command named.
func runHelp(c *cobra.Command, args []string) error {
	target, rest, err := c.Root().Find(args)
	if err != nil {
		return usageError{err.Error()}
	}
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("%s; run '%s --help' for the list", unknownSubcommand(target, rest[0]), target.CommandPath())}
	}
	return target.Help()
}

// flagError makes an error in the flags a command-line error (exit code 2), with a hint for a
// long flag given with one dash, as Go's flag package allowed (-json for --json), and for a
// negative number.
func flagError(c *cobra.Command, err error) error {
	var missing *pflag.NotExistError
	if errors.As(err, &missing) {
		name, _, _ := strings.Cut(missing.GetSpecifiedShortnames(), "=")
		if len(name) > 1 && c.Flags().Lookup(name) != nil {
			return usageError{fmt.Sprintf("%v (a long flag takes two dashes: --%s)", err, name)}
		}
		if _, nerr := strconv.ParseFloat(name, 64); nerr == nil {
			return usageError{fmt.Sprintf("%v (put -- before arguments that start with -, e.g. -- -%s)", err, name)}
		}
	}
	return usageError{err.Error()}
}
