package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// asCLI is the environment variable that makes the test binary run as the atelier binary.
const asCLI = "ATELIER_TEST_AS_CLI"

func TestVersionFlag(t *testing.T) {
	want := ok(t, "version")
	if !strings.HasPrefix(want, "atelier ") || strings.Count(want, "\n") != 1 {
		t.Fatalf("atelier version = %q, want one line naming atelier", want)
	}
	for _, flag := range []string{"--version", "-v"} {
		if got := ok(t, flag); got != want {
			t.Errorf("atelier %s = %q, want what atelier version prints: %q", flag, got, want)
		}
	}
	if out := ok(t, "help"); !strings.Contains(out, "-v, --version") {
		t.Errorf("atelier help does not mention --version:\n%s", out)
	}
}

func TestHelpOfNestedCommands(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"help", "gadget", "deploy"}, {"gadget", "deploy", "--help"}, {"gadget", "deploy", "-h"}} {
		out := ok(t, args...)
		for _, want := range []string{
			"Usage: atelier gadget deploy [--grant NAME,...] [--client FILE.js] NAME FILE.wasm|DIR\n",
			"creates the gadget if there is none of that name", // the details
			"Examples:\n  atelier gadget deploy counter counter.wasm --grant atelier:host/kv,atelier:host/log\n",
			"Flags:\n", "--grant value ", "--client string ", "--workspace string ", "-h, --help ",
			`"ws://127.0.0.1:8787/api")`, // the default
		} {
			if !strings.Contains(out, want) {
				t.Errorf("atelier %s lacks %q:\n%s", strings.Join(args, " "), want, out)
			}
		}
		if strings.Contains(out, "[=true|false]") || strings.Contains(out, "grantList") {
			t.Errorf("atelier %s shows how Go names the flags' types:\n%s", strings.Join(args, " "), out)
		}
	}

	// A group with an action of its own lists its subcommands and its flags.
	out := ok(t, "help", "admin", "quota")
	for _, want := range []string{"Usage: atelier admin quota [--server URL] [--json]", "Subcommands:\n  set ", "--json ", "Examples:\n  atelier admin quota\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("atelier help admin quota lacks %q:\n%s", want, out)
		}
	}
	if got := ok(t, "help", "admin", "quota", "set"); !strings.HasPrefix(got, "Usage: atelier admin quota set [--server URL] NAME VALUE\n") {
		t.Errorf("atelier help admin quota set = %q", got)
	}

	// A group alone prints its help; a group with an action runs it.
	if out := ok(t, "gadget"); !strings.HasPrefix(out, "Usage: atelier gadget <subcommand> [flags] [arguments]\n") || !strings.Contains(out, "  rollback ") {
		t.Errorf("atelier gadget = %q, want its help", out)
	}
	fails(t, 1, []string{"admin", "quota"}, "not logged in")
	if r := atelier(context.Background(), ""); r.code != 0 || r.stdout != ok(t, "help") {
		t.Errorf("atelier without arguments: exit %d, %q; want the help", r.code, r.stdout)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script := ok(t, "completion", shell)
		// The scripts ask the binary (atelier __complete ...) for the candidates.
		if len(script) < 1000 || !strings.Contains(script, "atelier") || !strings.Contains(script, "__complete") {
			t.Errorf("atelier completion %s = %q, want a completion script for atelier", shell, script)
		}
	}
	if out := ok(t, "completion", "bash", "--help"); !strings.Contains(out, "source <(atelier completion bash)") {
		t.Errorf("atelier completion bash --help = %q, want how to load it", out)
	}

	// What the scripts ask: the commands, a group's subcommands, a command's flags.
	candidates := func(args ...string) []string {
		var names []string
		for _, line := range strings.Split(ok(t, append([]string{"__complete"}, args...)...), "\n") {
			if name, _, _ := strings.Cut(line, "\t"); name != "" && !strings.HasPrefix(name, ":") {
				names = append(names, name)
			}
		}
		return names
	}
	var want []string
	for _, c := range commands() {
		want = append(want, c.name)
	}
	if got := candidates(""); !reflect.DeepEqual(got, append(want, "completion", "help")) {
		t.Errorf("completions of atelier: %q, want %q and completion, help", got, want)
	}
	want = nil
	for _, c := range gadgetCommand().subcommands {
		want = append(want, c.name)
	}
	if got := candidates("gadget", ""); !reflect.DeepEqual(got, want) {
		t.Errorf("completions of atelier gadget: %q, want %q", got, want)
	}
	if got := candidates("gadget", "deploy", "todo", "--gr"); !reflect.DeepEqual(got, []string{"--grant"}) {
		t.Errorf("completions of atelier gadget deploy todo --gr: %q, want --grant", got)
	}
	if got := candidates("help", "gad"); !reflect.DeepEqual(got, []string{"gadget"}) {
		t.Errorf("completions of atelier help gad: %q, want gadget", got)
	}
}

// TestCompletionInBash loads `atelier completion bash` into bash and completes command lines
// with it, the test binary standing in for atelier.
func TestCompletionInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(self, filepath.Join(bin, "atelier")); err != nil {
		t.Fatal(err)
	}
	script := `# What the script takes from the bash-completion package, which is not always installed.
_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(atelier completion bash)
complete -p atelier
try() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); __start_atelier 2>/dev/null; echo "$*: ${COMPREPLY[*]}"; }
try atelier gad
try atelier gadget dep
try atelier gadget deploy todo --gr
try atelier admin quota s
`
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), asCLI+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := `complete -o default -F __start_atelier atelier
atelier gad: gadget
atelier gadget dep: deploy
atelier gadget deploy todo --gr: --grant
atelier admin quota s: set
`
	if string(out) != want {
		t.Errorf("bash completion:\n%s\nwant:\n%s", out, want)
	}
}

// TestFlagsAnywhere: flags go before, between and after the positional arguments, "--" ends
// them, and a one-letter Go flag on the variable of a long one is its shorthand.
func TestFlagsAnywhere(t *testing.T) {
	type parsed struct {
		args, grants []string
		workspace    string
		json         bool
	}
	var got parsed
	deploy := command{
		name:  "deploy",
		usage: "NAME FILE",
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			grants := &grantList{}
			fs.Var(grants, "grant", "interfaces")
			workspace := fs.String("workspace", "", "the workspace")
			fs.StringVar(workspace, "w", *workspace, "short for --workspace")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(_ context.Context, args []string) error {
				got = parsed{args, grants.grants, *workspace, *asJSON}
				return nil
			}
		},
	}
	for _, tc := range []struct {
		args []string
		want parsed
	}{
		{[]string{"todo", "todo.wasm", "--grant", "a,b"}, parsed{args: []string{"todo", "todo.wasm"}, grants: []string{"a", "b"}}},
		{[]string{"--grant=a", "todo", "-w", "lab", "--grant", "b", "todo.wasm", "--json"},
			parsed{args: []string{"todo", "todo.wasm"}, grants: []string{"a", "b"}, workspace: "lab", json: true}},
		{[]string{"todo", "--workspace=lab", "todo.wasm", "-wjs"}, parsed{args: []string{"todo", "todo.wasm"}, workspace: "js"}},
		{[]string{"calc", "--json", "--", "-1", "--grant"}, parsed{args: []string{"calc", "-1", "--grant"}, json: true}},
	} {
		got = parsed{}
		root := rootCommand([]command{deploy}, io.Discard, io.Discard)
		root.SetArgs(append([]string{"deploy"}, tc.args...))
		if err := root.ExecuteContext(context.Background()); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("deploy %q: %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}

	var help strings.Builder
	root := rootCommand([]command{deploy}, &help, io.Discard)
	root.SetArgs([]string{"help", "deploy"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "  -w, --workspace string ") || strings.Contains(help.String(), "--w ") {
		t.Errorf("the help of deploy does not show -w as the shorthand of --workspace:\n%s", help.String())
	}
	root = rootCommand([]command{deploy}, io.Discard, io.Discard)
	root.SetArgs([]string{"deploy", "--w", "lab"})
	if err := root.Execute(); err == nil {
		t.Error("deploy --w lab succeeded: -w is a shorthand only")
	}

	// A command's own -h wins over the help's shorthand.
	var host string
	hosts := command{name: "hosts", flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
		h := fs.String("h", "", "a host")
		return func(context.Context, []string) error { host = *h; return nil }
	}}
	help.Reset()
	root = rootCommand([]command{hosts}, &help, io.Discard)
	root.SetArgs([]string{"hosts", "-h", "example.com"})
	if err := root.Execute(); err != nil || host != "example.com" || help.Len() != 0 {
		t.Errorf("hosts -h example.com: %v, host %q, printed %q", err, host, help.String())
	}
	root = rootCommand([]command{hosts}, &help, io.Discard)
	root.SetArgs([]string{"hosts", "--help"})
	if err := root.Execute(); err != nil || !strings.Contains(help.String(), "      --help ") {
		t.Errorf("hosts --help: %v, %q", err, help.String())
	}

	// And in a real command: flags between and after the positional arguments.
	isolate(t)
	fails(t, 2, []string{"gadget", "call", "todo", "--server", "ftp://x", "add", "5"}, "scheme must be ws, wss, http or https")
	fails(t, 2, []string{"gadget", "call", "todo", "add", "--server=ftp://x"}, "scheme must be ws, wss, http or https")
	fails(t, 2, []string{"gadget", "call", "todo", "add", "--", "--server=ftp://x"}, "argument 1 (--server=ftp://x) is not one JSON value")
}
