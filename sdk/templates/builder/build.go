package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"atelier/sdk/templates"
	"atelier/sdk/wit"
)

// cacheFormat changes when the way a build turns inputs into outputs changes, so that older
// cache entries are not used.
const cacheFormat = "atelier-build-2"

// Options configure Build.
type Options struct {
	// CacheDir holds the npm tools and the cached outputs (default: DefaultCacheDir).
	CacheDir string
	// Log receives progress lines (default: discarded).
	Log io.Writer
	// RunJS, when set, runs module (an ES module whose default export is an async function)
	// in a sandbox that reaches nothing, and returns the function's result as encoding/json
	// decodes it: Build runs a JS or TS project's top level with it, its WIT imports stubbed,
	// to check the kinds of its exports before componentizing (cmd/atelier passes Code
	// Mode's QuickJS engine). Without it that check is skipped.
	RunJS func(ctx context.Context, module string) (any, error)
}

// Result is a built component.
type Result struct {
	Config Config
	World  *wit.World
	// Component is the component or, for format extism, the Extism plugin (a core module).
	Component []byte
	// Cached reports that the component came from the cache.
	Cached bool
}

// DefaultCacheDir returns $ATELIER_CACHE, else the user cache folder's atelier/.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("ATELIER_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache folder (set ATELIER_CACHE): %w", err)
	}
	return filepath.Join(d, "atelier"), nil
}

// build is one run of Build.
type build struct {
	dir       string // the project, as the user named it
	cfg       Config
	world     *wit.World
	cache     string
	log       io.Writer
	toolsHash string // of the embedded componentize folder
	clang     string // the C compiler, for a C project
	runJS     func(context.Context, string) (any, error)
}

// Build builds the project in dir into a component.
func Build(ctx context.Context, dir string, opt Options) (*Result, error) {
	b := &build{dir: dir, cache: opt.CacheDir, log: opt.Log, runJS: opt.RunJS}
	if b.log == nil {
		b.log = io.Discard
	}
	if b.cache == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		b.cache = d
	}
	var err error
	if b.cfg, err = ReadConfig(dir); err != nil {
		return nil, err
	}
	if b.world, err = LoadWorld(dir, b.cfg.World); err != nil {
		return nil, err
	}
	if b.cfg.Kind == "gadget" && b.cfg.Lang == "go" {
		if err := b.generateGoBindings(); err != nil {
			return nil, err
		}
	}
	extism := b.cfg.Format == templates.FormatExtism
	var script, node string
	if !extism { // an Extism plugin is the compiler's core module: no npm tools
		if script, err = b.nodeTools(ctx); err != nil {
			return nil, err
		}
		if node, err = b.version(ctx, "node", "node", "--version"); err != nil {
			return nil, err
		}
	}
	toolVersion, err := b.compiler(ctx)
	if err != nil {
		return nil, err
	}
	key, err := b.key(toolVersion, node)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: b.cfg, World: b.world}
	cached := filepath.Join(b.cache, "builds", b.cfg.Name+"-"+b.cfg.Lang+"-"+key+".wasm")
	if res.Component, err = os.ReadFile(cached); err == nil {
		res.Cached = true
		b.progress("%s (%s): unchanged, from the cache", b.cfg.Name, b.cfg.Lang)
		return res, nil
	}
	tmp, err := os.MkdirTemp("", "atelier-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	switch {
	case extism:
		res.Component, err = b.buildExtism(ctx, tmp)
	case b.cfg.Lang == "go":
		res.Component, err = b.buildGo(ctx, script, tmp)
	case b.cfg.Lang == "c":
		res.Component, err = b.buildC(ctx, script, tmp)
	default:
		res.Component, err = b.buildJS(ctx, script, tmp)
	}
	if err != nil {
		return nil, err
	}
	what := "component"
	if extism {
		what = "Extism plugin"
	}
	b.progress("%s (%s): %s of %d bytes in %s", b.cfg.Name, b.cfg.Lang, what, len(res.Component), time.Since(start).Round(time.Millisecond))
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		return nil, err
	}
	part := cached + ".tmp"
	if err := os.WriteFile(part, res.Component, 0o644); err != nil {
		return nil, err
	}
	return res, os.Rename(part, cached)
}

// compiler makes sure the language's compiler is there (installing a C toolchain with apt
// when missing; b.clang is set then) and returns its version ("" for JS and TS).
func (b *build) compiler(ctx context.Context) (string, error) {
	switch b.cfg.Lang {
	case "go":
		return b.version(ctx, "go", "go", "version")
	case "c":
		if err := b.debianTools(ctx, "the C toolchain", cTools); err != nil {
			return "", err
		}
		clang, err := clangPath()
		if err != nil {
			return "", err
		}
		b.clang = clang
		return b.version(ctx, "clang", clang, "--version")
	}
	return "", nil
}

// version returns the first line that `name args...` prints.
func (b *build) version(ctx context.Context, name, path string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, path, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s not usable (%s %s: %v)", name, path, strings.Join(args, " "), err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}

// key hashes every input of the build: the project's files (but build/, node_modules/ and
// dot folders), the settings, the tools' versions and the embedded npm manifest.
func (b *build) key(toolVersion, nodeVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%+v\n%s\n%s\n%s\n", cacheFormat, b.cfg, toolVersion, nodeVersion, b.toolsHash)
	err := filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.dir, path)
		if d.IsDir() {
			if rel != "." && (rel == "build" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash the project: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// LoadWorld reads the project's WIT (dir/wit with its deps/) and returns world.
func LoadWorld(dir, world string) (*wit.World, error) {
	witDir := filepath.Join(dir, "wit")
	if _, err := os.Stat(filepath.Join(witDir, "deps")); err != nil {
		return nil, fmt.Errorf("%s has no deps/ folder with the atelier WIT packages: copy it from a project made by `atelier new`", witDir)
	}
	r, pkgs, err := wit.Load(witDir)
	if err != nil {
		var list wit.ErrorList
		if errors.As(err, &list) {
			return nil, fmt.Errorf("the project's WIT has errors:\n%w", err)
		}
		return nil, err
	}
	w, err := r.SelectWorld(pkgs[0], world)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (set \"world\" in %s)", witDir, err, ConfigFile)
	}
	return w, nil
}

// compileCore runs the compiler cmd (named what), which writes the core module core, and
// checks the module's exports (hint says how the language declares a missing one).
func (b *build) compileCore(what string, cmd *exec.Cmd, core string, hint func(string) string) error {
	if out, err := b.run(what, cmd, false); err != nil {
		return fmt.Errorf("%s failed:\n%s", what, b.relDisplay(out))
	}
	return b.checkCoreExports(core, hint)
}

// componentizeCore compiles the core module core (compileCore) and turns it into a component
// next to it.
func (b *build) componentizeCore(ctx context.Context, script, what string, cmd *exec.Cmd, core string, hint func(string) string) ([]byte, error) {
	if err := b.compileCore(what, cmd, core, hint); err != nil {
		return nil, err
	}
	return b.componentize(ctx, script, "go", core, filepath.Join(filepath.Dir(core), "out.wasm"))
}

// componentize runs componentize.mjs: mode go turns the core module input into a component,
// mode js the bundled module input.
func (b *build) componentize(ctx context.Context, script, mode, input, out string) ([]byte, error) {
	witDir := filepath.Join(b.dir, "wit")
	what := "componentize"
	if mode == "js" {
		what = "componentize-qjs"
	}
	b.progress("%s: %s (world %s)", b.cfg.Name, what, b.world.Name)
	cmd := exec.CommandContext(ctx, "node", script, mode, input, witDir, b.world.Name, filepath.Join(witDir, "deps"), out)
	if log, err := b.run(what, cmd, false); err != nil {
		return nil, b.explainComponentize(strings.TrimSpace(string(log)))
	}
	return os.ReadFile(out)
}

// explainComponentize turns componentize.mjs's error into one that says what to do.
func (b *build) explainComponentize(msg string) error {
	msg = strings.TrimPrefix(msg, "componentize: ")
	if err := b.mismatchError(msg); err != nil {
		return err
	}
	if strings.Contains(msg, "type mismatch") || strings.Contains(msg, "expected") && strings.Contains(msg, "found") {
		return fmt.Errorf("the code does not match world %s: %s\nThe parameters and results of each export must be the world's, flattened to core types (u32 -> uint32/int32_t, u64 -> uint64/int64_t, string -> pointer and length); compare with %s",
			b.world.Name, msg, b.world.Pos)
	}
	return fmt.Errorf("componentize failed: %s", msg)
}

// relDisplay rewrites the compiler's paths relative to the project ("./main.go:3:1") to paths
// the user can open from where atelier build ran.
func (b *build) relDisplay(out []byte) string {
	s := strings.TrimSpace(string(out))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "./") {
			lines[i] = filepath.Clean(b.dir) + string(filepath.Separator) + l[2:]
		}
	}
	return strings.Join(lines, "\n")
}
