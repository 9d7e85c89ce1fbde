package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"atelier/sdk/wit"
)

// witImports matches the import paths of WIT interfaces ("atelier:host/kv@0.1.0").
const witImports = `^(atelier|wasi):`

// bundle bundles the project's entry module (JS or TS: types are stripped, not checked) into
// one ES module with the WIT imports left external, and returns its text and export names.
// With probe, it bundles probeEntry instead, which imports the entry module, with the WIT
// imports stubbed (see probeExports).
func (b *build) bundle(probe bool) ([]byte, map[string]bool, error) {
	entry := filepath.Join(b.dir, b.cfg.Entry)
	if _, err := os.Stat(entry); err != nil {
		return nil, nil, fmt.Errorf("entry module %s: %w (set \"entry\" in %s)", entry, err, ConfigFile)
	}
	opts := api.BuildOptions{
		EntryPoints: []string{entry},
		Bundle:      true,
		Write:       false,
		Outfile:     "app.js",
		Format:      api.FormatESModule,
		Platform:    api.PlatformNeutral,
		Target:      api.ES2022,
		External:    []string{"atelier:*", "wasi:*"},
		Metafile:    true,
		LogLevel:    api.LogLevelSilent,
		Charset:     api.CharsetUTF8,
	}
	if probe {
		opts.EntryPoints, opts.External, opts.Plugins = nil, nil, []api.Plugin{stubImports}
		wanted, err := json.Marshal(wantedMethods(b.world))
		if err != nil {
			return nil, nil, fmt.Errorf("probe %s: %w", b.cfg.Entry, err)
		}
		opts.Stdin = &api.StdinOptions{Contents: fmt.Sprintf(probeEntry, "./"+filepath.ToSlash(b.cfg.Entry), wanted),
			ResolveDir: b.dir, Sourcefile: "atelier-probe.js", Loader: api.LoaderJS}
	}
	res := api.Build(opts)
	if len(res.Errors) > 0 {
		msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return nil, nil, fmt.Errorf("%s has errors:\n%s", b.cfg.Entry, strings.TrimSpace(strings.Join(msgs, "")))
	}
	if len(res.OutputFiles) != 1 {
		return nil, nil, fmt.Errorf("bundle %s: esbuild wrote %d files, want 1", b.cfg.Entry, len(res.OutputFiles))
	}
	var meta struct {
		Outputs map[string]struct {
			Exports []string `json:"exports"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil {
		return nil, nil, fmt.Errorf("bundle %s: read esbuild's metafile: %w", b.cfg.Entry, err)
	}
	exports := map[string]bool{}
	for _, o := range meta.Outputs {
		for _, e := range o.Exports {
			exports[e] = true
		}
	}
	return res.OutputFiles[0].Contents, exports, nil
}

// buildJS bundles the entry module, checks its exports against the world and componentizes
// it with componentize-qjs.
func (b *build) buildJS(ctx context.Context, script, tmp string) ([]byte, error) {
	b.progress("%s: esbuild bundle %s", b.cfg.Name, b.cfg.Entry)
	code, exports, err := b.bundle(false)
	if err != nil {
		return nil, err
	}
	if err := missingExports(worldExports(b.world), func(e wantExport) bool { return exports[e.js] }, nil); err != nil {
		return nil, err
	}
	if err := b.checkJSExports(ctx); err != nil {
		return nil, err
	}
	bundled := filepath.Join(tmp, "app.js")
	if err := os.WriteFile(bundled, code, 0o644); err != nil {
		return nil, err
	}
	return b.componentize(ctx, script, "js", bundled, filepath.Join(tmp, "out.wasm"))
}

// stubImports resolves the WIT imports to one stub module: any property of it is itself, and
// calling it returns undefined, so that the module's top level can run without the host.
var stubImports = api.Plugin{Name: "atelier-stub-imports", Setup: func(pb api.PluginBuild) {
	pb.OnResolve(api.OnResolveOptions{Filter: witImports}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
		return api.OnResolveResult{Path: args.Path, Namespace: "atelier-stub"}, nil
	})
	stub := `const stub = new Proxy(function () {}, { get: (t, k) => (k === "__esModule" ? false : stub), apply: () => undefined });
module.exports = stub;`
	pb.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "atelier-stub"}, func(api.OnLoadArgs) (api.OnLoadResult, error) {
		return api.OnLoadResult{Contents: &stub, Loader: api.LoaderJS}, nil
	})
}}

// probeEntry is a module (a Code Mode snippet), given the entry module's path and a JSON
// object (export name -> the method names the world wants of it), that imports the entry
// module and returns, for each of its exports, its typeof and which of those names are
// functions on it. The names are looked up rather than enumerated, so that the methods a
// class instance inherits from its prototype count.
const probeEntry = `import * as m from %q;
const wanted = new Map(Object.entries(%s));
export default async function () {
  const out = {};
  for (const [k, v] of Object.entries(m)) {
    const obj = v !== null && typeof v === "object";
    const fns = (wanted.get(k) ?? []).filter((p) => obj && typeof v[p] === "function");
    out[k] = { type: v === null ? "null" : typeof v, fns };
  }
  return out;
}`

// wantedMethods returns, for each interface the world exports, the JS export's name and the
// names of its methods.
func wantedMethods(w *wit.World) map[string][]string {
	out := map[string][]string{}
	for _, e := range worldExports(w) {
		if e.method != "" {
			out[e.js] = append(out[e.js], e.method)
		}
	}
	return out
}

// exportShape is what probeEntry reports of one export.
type exportShape struct {
	Type string   `json:"type"`
	Fns  []string `json:"fns"`
}

// probeExports runs the entry module's top level with Options.RunJS (in a sandbox, with its
// WIT imports stubbed) and returns the shape of each export. It returns nil without RunJS or
// when the module cannot run that way (its top level needs a real import, say): the shapes are
// a check before componentize, not a requirement.
func (b *build) probeExports(ctx context.Context) map[string]exportShape {
	if b.runJS == nil {
		return nil
	}
	code, _, err := b.bundle(true)
	if err != nil {
		return nil
	}
	v, err := b.runJS(ctx, string(code))
	if err != nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var shapes map[string]exportShape
	if json.Unmarshal(raw, &shapes) != nil {
		return nil
	}
	return shapes
}

// checkJSExports checks that each function the world exports is a function of the entry
// module, and each interface an object with a function per interface function, naming the
// export's source line and its WIT line when one is not.
func (b *build) checkJSExports(ctx context.Context) error {
	shapes := b.probeExports(ctx)
	if shapes == nil {
		return nil
	}
	var errs []error
	reported := map[string]bool{} // exports found not to be objects
	for _, e := range worldExports(b.world) {
		got, ok := shapes[e.js]
		if !ok || reported[e.js] {
			continue // missingExports has reported a missing one
		}
		var problem string
		switch {
		case e.method == "" && got.Type != "function":
			problem = fmt.Sprintf("%s is %s, not a function", e.js, article(got.Type))
		case e.method != "" && got.Type != "object":
			problem = fmt.Sprintf("%s is %s, not an object with the interface's functions", e.js, article(got.Type))
		case e.method != "" && !slices.Contains(got.Fns, e.method):
			problem = fmt.Sprintf("%s has no function %s", e.js, e.method)
		default:
			continue
		}
		msg := fmt.Sprintf("%s, but world %s declares\n  %s: %s", problem, b.world.Name, e.pos, witLine(e.pos.File, e.pos.Line))
		if at := b.findExport(e.js); at != "" {
			msg = at + ": " + msg
		}
		errs = append(errs, errors.New(msg))
		reported[e.js] = e.method != "" && got.Type != "object"
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("the entry module does not match its world:\n%w", errors.Join(errs...))
}

// findExport returns "file:line" of the line that exports name: in the entry module, else
// in the project's other sources (a module the entry re-exports), or "".
func (b *build) findExport(name string) string {
	if at := findInFile(filepath.Join(b.dir, b.cfg.Entry), exportsName(name)); at != "" {
		return at
	}
	return FindLine(b.dir, false, exportsName(name))
}

// article puts "a" or "an" before a typeof name.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// exportsName matches a JS or TS line that exports name: a declaration
// (`export const name`, `export function name`, ...) or an export list naming it.
func exportsName(name string) func(string) bool {
	decl := regexp.MustCompile(`^\s*export\s+(default\s+)?((async\s+)?function\*?|const|let|var|class)\s+` + regexp.QuoteMeta(name) + `\b`)
	list := regexp.MustCompile(`^\s*export\s*\{[^}]*\b` + regexp.QuoteMeta(name) + `\b`)
	return func(line string) bool { return decl.MatchString(line) || list.MatchString(line) }
}
