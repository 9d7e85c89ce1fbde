package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// bundle bundles the project's entry module (JS or TS: types are stripped, not checked) into
// one ES module with the WIT imports left external, and returns its text and export names.
func (b *build) bundle() ([]byte, map[string]bool, error) {
	entry := filepath.Join(b.dir, b.cfg.Entry)
	if _, err := os.Stat(entry); err != nil {
		return nil, nil, fmt.Errorf("entry module %s: %w (set \"entry\" in %s)", entry, err, ConfigFile)
	}
	res := api.Build(api.BuildOptions{
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
	})
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
	code, exports, err := b.bundle()
	if err != nil {
		return nil, err
	}
	if err := missingExports(worldExports(b.world), func(e wantExport) bool { return exports[e.js] }, nil); err != nil {
		return nil, err
	}
	bundled := filepath.Join(tmp, "app.js")
	if err := os.WriteFile(bundled, code, 0o644); err != nil {
		return nil, err
	}
	return b.componentize(ctx, script, "js", bundled, filepath.Join(tmp, "out.wasm"))
}
