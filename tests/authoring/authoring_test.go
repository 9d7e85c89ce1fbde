package authoring

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/sdk/templates"
	"atelier/tests/serveproc"
)

// tmpDir holds this run's binary and the server's compiled-component cache.
var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "authoring", &tmpDir) }

// coldTools reports whether ATELIER_AUTHORING_COLD=1 asks for builds from empty tool caches.
func coldTools() bool { return os.Getenv("ATELIER_AUTHORING_COLD") == "1" }

// toolCache returns the cache folder `atelier build` installs its tools into. By default it is
// the user's (warm after the first run); with ATELIER_AUTHORING_COLD=1 it is an empty folder,
// and npm's own cache too, so that the first build of each language is a cold one.
func toolCache(t *testing.T) (dir string, env []string) {
	if coldTools() {
		cold := filepath.Join(tmpDir, "cold")
		return filepath.Join(cold, "atelier"), []string{"npm_config_cache=" + filepath.Join(cold, "npm")}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "atelier"), nil
}

// cli runs the atelier binary in a folder with a fixed environment.
type cli struct {
	t   *testing.T
	bin string
	env []string
}

// run runs `atelier args...` in dir and returns its stdout, failing the test on an error.
func (c cli) run(dir string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.try(dir, args...)
	if err != nil {
		c.t.Fatalf("atelier %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// try runs `atelier args...` in dir and returns its stdout, stderr and error.
func (c cli) try(dir string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir, cmd.Env = dir, c.env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// stream is a running command whose standard output is read line by line.
type stream struct {
	t     *testing.T
	lines chan string
	cmd   *exec.Cmd
}

// follow starts `atelier args...` in dir (a command that keeps printing, like gadget logs),
// waits for its first line and stops it when the test ends.
func (c cli) follow(dir string, args ...string) *stream {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = dir, c.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	s := &stream{t: c.t, lines: make(chan string, 100), cmd: cmd}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	c.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s.waitFor("Following") // subscribed: later lines reach it
	return s
}

// waitFor reads lines until one contains want, failing the test after a minute or at the end
// of the output.
func (s *stream) waitFor(want string) {
	s.t.Helper()
	var seen []string
	deadline := time.After(time.Minute)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("atelier %s ended without printing %q; it printed:\n%s", strings.Join(s.cmd.Args[1:], " "), want, strings.Join(seen, "\n"))
			}
			if strings.Contains(l, want) {
				return
			}
			seen = append(seen, l)
		case <-deadline:
			s.t.Fatalf("atelier %s printed no %q within a minute; it printed:\n%s", strings.Join(s.cmd.Args[1:], " "), want, strings.Join(seen, "\n"))
		}
	}
}

// password is the test user's password.
const password = "correct horse battery staple"

// server starts `atelier serve`, signs up a user with a workspace and returns a cli logged in
// to it, and the admin token.
func server(t *testing.T) (cli, string) {
	bin := serveproc.Binary(t, tmpDir)
	srv := serveproc.Start(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "artifacts"))
	cache, extra := toolCache(t)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "ATELIER_SERVER="+srv.URL,
		"ATELIER_PASSWORD="+password, "ATELIER_CACHE="+cache, "ATELIER_TOKEN=")
	env = append(env, extra...)
	c := cli{t: t, bin: bin, env: env}
	c.run(t.TempDir(), "login", "--signup", "--username", "ada")
	c.run(t.TempDir(), "workspace", "create", "home")
	return c, srv.AdminToken(t)
}

// TestGadgetTemplates makes a gadget from each language's template outside the repository,
// builds it, deploys it to a real server and calls it, in two rounds. The build tools are the
// user's (installed by an earlier run, so both rounds are warm) unless ATELIER_AUTHORING_COLD=1
// starts the first round from empty caches (cold: it installs them). It logs the time from
// `atelier new` to the first answered call and the component's size.
func TestGadgetTemplates(t *testing.T) {
	c, _ := server(t)
	rounds := []string{"warm1", "warm2"}
	if coldTools() {
		rounds = []string{"cold", "warm"}
	}
	for _, round := range rounds {
		for _, lang := range templates.Langs("gadget") {
			t.Run(round+"/"+lang, func(t *testing.T) {
				work := t.TempDir()
				name := lang + "-counter-" + round
				start := time.Now()
				c.run(work, "new", "gadget", "--lang", lang, name)
				project := filepath.Join(work, name)
				c.run(work, "build", name)
				wasm := filepath.Join(project, "build", name+".wasm")
				c.run(project, "gadget", "deploy", name, wasm, "--grant", strings.Join(templates.Grants("gadget", lang), ","))
				first := c.run(project, "gadget", "call", name, "increment", "2")
				elapsed := time.Since(start)
				if got := strings.TrimSpace(first); got != "2" {
					t.Fatalf("increment 2 on a new gadget = %q, want 2", got)
				}
				logs := c.follow(project, "gadget", "logs", name)
				if got := strings.TrimSpace(c.run(project, "gadget", "call", name, "increment", "40")); got != "42" {
					t.Fatalf("increment 40 = %q, want 42", got)
				}
				logs.waitFor("increment by 40 -> 42")
				if got := strings.TrimSpace(c.run(project, "gadget", "call", name, "get")); got != "42" {
					t.Fatalf("get = %q, want 42", got)
				}
				c.run(project, "gadget", "call", name, "reset")
				if got := strings.TrimSpace(c.run(project, "gadget", "call", name, "get")); got != "0" {
					t.Fatalf("get after reset = %q, want 0", got)
				}
				st, err := os.Stat(wasm)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("FIGURE gadget %s (%s round): new -> first answered call %s; component %d bytes", lang, round, elapsed.Round(10*time.Millisecond), st.Size())
			})
		}
	}
}
