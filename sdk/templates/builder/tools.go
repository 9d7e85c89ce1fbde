package builder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"atelier/sdk/templates"
)

// tickEvery is how often a long step reports that it is still running.
const tickEvery = 10 * time.Second

// progress writes one progress line.
func (b *build) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "atelier build: "+format+"\n", args...)
}

// run runs cmd, printing a line every tickEvery while it runs, and returns its output. With
// echo the output also goes to the progress log as it comes (apt), else it is only returned
// (npm, compilers: their errors are shown with the error).
func (b *build) run(what string, cmd *exec.Cmd, echo bool) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if echo {
		cmd.Stdout = io.MultiWriter(&out, b.log)
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return out.Bytes(), err
		case <-tick.C:
			b.progress("%s: still running (%s)", what, time.Since(start).Round(time.Second))
		}
	}
}

// lockFile takes an exclusive lock on path (created if missing) and returns its release: one
// build at a time installs tools or writes a cache entry, also across processes.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// fsHash returns the hex sha256 of every file of fsys, by name and content.
func fsHash(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// nodeTools extracts the componentize folder into the cache and installs its npm packages
// from the lock file on first use. It returns the path of componentize.mjs.
func (b *build) nodeTools(ctx context.Context) (string, error) {
	if err := b.installNode(ctx); err != nil {
		return "", err
	}
	src := templates.Componentize()
	sum, err := fsHash(src)
	if err != nil {
		return "", err
	}
	b.toolsHash = sum
	dir := filepath.Join(b.cache, "tools", "componentize-"+sum[:12])
	unlock, err := lockFile(filepath.Join(b.cache, "tools", ".lock"))
	if err != nil {
		return "", fmt.Errorf("npm tools: %w", err)
	}
	defer unlock()
	script := filepath.Join(dir, "componentize.mjs")
	marker := filepath.Join(dir, "node_modules", ".atelier-installed")
	if _, err := os.Stat(marker); err == nil {
		return script, nil
	}
	if err := extract(src, dir); err != nil {
		return "", fmt.Errorf("extract the npm tools' manifest into %s: %w", dir, err)
	}
	b.progress("installing npm tools (jco, componentize-qjs; about 340 MB, once) into %s", dir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=http")
	cmd.Dir = dir
	if out, err := b.run("npm ci", cmd, false); err != nil {
		return "", fmt.Errorf("npm ci in %s failed (%v): check that the npm registry is reachable, then run atelier build again\n%s", dir, err, tail(out, 20))
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", err
	}
	b.progress("npm tools installed in %s", time.Since(start).Round(100*time.Millisecond))
	return script, nil
}

// nodeCommands are the commands the npm tools need, each with the Debian package providing it.
var nodeCommands = []debianNeed{{[]string{"node"}, "nodejs"}, {[]string{"npm"}, "npm"}}

// missingNode returns the Debian packages of the commands of nodeCommands that lookPath does
// not find.
func missingNode(lookPath func(string) (string, error)) []string {
	return missingDebian(nodeCommands, func(cmd string) bool { _, err := lookPath(cmd); return err == nil })
}

// installNode makes sure node and npm are on PATH, installing Debian's nodejs and npm with
// apt when they are missing.
func (b *build) installNode(ctx context.Context) error {
	missing := missingNode(exec.LookPath)
	if len(missing) == 0 {
		return nil
	}
	const how = "install Node.js 18 or newer (https://nodejs.org, or Debian: sudo apt-get install nodejs npm), then run atelier build again"
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		return fmt.Errorf("atelier build needs node and npm on PATH to turn code into a component: %s", how)
	}
	if err := b.aptInstall(ctx, "Node.js (for the npm tools)", missing); err != nil {
		return err
	}
	if still := missingNode(exec.LookPath); len(still) > 0 {
		return fmt.Errorf("apt installed %s, but node or npm is still not on PATH (missing: %s): %s", strings.Join(missing, " "), strings.Join(still, ", "), how)
	}
	return nil
}

// extract writes the files of fsys into dir, replacing those of an interrupted earlier run.
func extract(fsys fs.FS, dir string) error {
	return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// debianNeed is one Debian package a build needs; any of names (packages, or the commands
// they provide) counts as installed, and install is the one apt installs when none is.
type debianNeed struct {
	names   []string
	install string
}

// cTools are the Debian packages of a C build.
var cTools = []debianNeed{
	{[]string{"clang", "clang-14"}, "clang"},
	{[]string{"lld", "lld-14"}, "lld"},
	{[]string{"wasi-libc"}, "wasi-libc"},
	{[]string{"libclang-rt-14-dev-wasm32"}, "libclang-rt-14-dev-wasm32"},
}

// installed reports whether dpkg lists the package as installed.
func installed(name string) bool {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", name).Output()
	return err == nil && strings.Contains(string(out), "install ok installed")
}

// missingDebian returns the packages of needs that isInstalled finds none of the names of.
func missingDebian(needs []debianNeed, isInstalled func(string) bool) []string {
	var missing []string
	for _, n := range needs {
		found := false
		for _, name := range n.names {
			if isInstalled(name) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, n.install)
		}
	}
	return missing
}

// aptCommand returns how to install pkgs: the command lines to run as uid, through sudo when
// not root, with DEBIAN_FRONTEND=noninteractive set by env behind sudo (whose env_reset drops
// it from sudo's own environment). Without a terminal sudo gets -n: it fails rather than wait
// for a password nobody can type. It returns nil when not root and there is no sudo; hint is
// the command to show then.
func aptCommand(pkgs []string, uid int, haveSudo, terminal bool) (update, install []string, hint string) {
	args := append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, pkgs...)
	hint = "sudo apt-get update && sudo " + strings.Join(args, " ")
	var prefix []string
	switch {
	case uid == 0:
	case haveSudo && terminal:
		prefix = []string{"sudo"}
	case haveSudo:
		prefix = []string{"sudo", "-n"}
	default:
		return nil, nil, hint
	}
	prefix = append(prefix, "env", "DEBIAN_FRONTEND=noninteractive")
	return append(slices.Clip(prefix), "apt-get", "update"), append(slices.Clip(prefix), args...), hint
}

// debianTools installs the missing packages of needs (for what) with apt.
func (b *build) debianTools(ctx context.Context, what string, needs []debianNeed) error {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		return nil // not Debian: the compiler lookup will say what is missing
	}
	missing := missingDebian(needs, installed)
	if len(missing) == 0 {
		return nil
	}
	return b.aptInstall(ctx, what, missing)
}

// aptInstall installs the Debian packages missing (for what) with apt-get, with sudo when not
// root, echoing apt's output as progress; when it cannot (not root, and no sudo or, without a
// terminal, no sudo without a password) it says what to run.
func (b *build) aptInstall(ctx context.Context, what string, missing []string) error {
	return b.aptInstallAs(ctx, what, missing, os.Getuid(), term.IsTerminal(int(os.Stdin.Fd())))
}

// aptInstallAs is aptInstall as user uid, with or without a terminal on stdin.
func (b *build) aptInstallAs(ctx context.Context, what string, missing []string, uid int, terminal bool) error {
	_, sudoErr := exec.LookPath("sudo")
	update, install, hint := aptCommand(missing, uid, sudoErr == nil, terminal)
	needRoot := fmt.Sprintf("%s is missing (Debian packages %s) and installing it needs root", what, strings.Join(missing, ", "))
	switch {
	case install == nil:
		return fmt.Errorf("%s: run\n  %s\nthen run atelier build again", needRoot, hint)
	case install[0] == "sudo" && !terminal && exec.CommandContext(ctx, "sudo", "-n", "true").Run() != nil:
		return fmt.Errorf("%s, and sudo wants a password, which it cannot ask for without a terminal: run\n  %s\nthen run atelier build again",
			needRoot, hint)
	}
	b.progress("installing Debian packages for %s: %s (%s)", what, strings.Join(missing, " "), strings.Join(install, " "))
	for _, argv := range [][]string{update, install} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin = os.Stdin // sudo may ask for a password
		if out, err := b.run(strings.Join(argv, " "), cmd, true); err != nil {
			return fmt.Errorf("%s failed (%v): run it yourself:\n  %s\n%s", strings.Join(argv, " "), err, hint, tail(out, 10))
		}
	}
	return nil
}
