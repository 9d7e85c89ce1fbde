// Command build bundles the browser shell: host/shell/web/src into host/shell/dist (shell.js,
// shell.css) with esbuild's Go API, reading npm packages (capnweb) from host/shell/web/node_modules.
// The gadget-frame prelude (web/src/frame.js, with its own copy of capnweb) is bundled first and
// imported by the shell as text through the module "atelier:frame-prelude".
//
//	go run ./host/shell/build [-root DIR]   # DIR: the repository root, default "."
//
// scripts/setup.sh runs it after `npm ci` in host/shell/web.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// preludeModule is the import path under which the shell receives the frame prelude's source.
const preludeModule = "atelier:frame-prelude"

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := build(*root); err != nil {
		fmt.Fprintln(os.Stderr, "build shell:", err)
		os.Exit(1)
	}
}

func build(root string) error {
	web := filepath.Join(root, "host", "shell", "web")
	web, err := filepath.Abs(web)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "capnweb", "package.json")); err != nil {
		return fmt.Errorf("capnweb is not installed in %s (run scripts/setup.sh, or npm ci there): %w", web, err)
	}
	common := api.BuildOptions{
		AbsWorkingDir:     web,
		Bundle:            true,
		Format:            api.FormatESModule,
		Target:            api.ES2022,
		Platform:          api.PlatformBrowser,
		MinifyWhitespace:  true,
		MinifySyntax:      true,
		MinifyIdentifiers: true,
		LegalComments:     api.LegalCommentsEndOfFile,
		LogLevel:          api.LogLevelWarning,
	}

	frame := common
	frame.EntryPoints = []string{"src/frame.js"}
	frame.Write = false
	frame.Outfile = "frame.js"
	res := api.Build(frame)
	if err := buildErr("frame prelude", res); err != nil {
		return err
	}
	prelude := string(res.OutputFiles[0].Contents)

	shell := common
	shell.EntryPoints = []string{"src/main.js"}
	shell.Outdir = filepath.Join(web, "..", "dist")
	shell.EntryNames = "shell"
	shell.Write = true
	shell.Loader = map[string]api.Loader{".css": api.LoaderCSS}
	shell.Plugins = []api.Plugin{{
		Name: "frame-prelude",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: "^" + preludeModule + "$"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
				return api.OnResolveResult{Path: a.Path, Namespace: "prelude"}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "prelude"}, func(api.OnLoadArgs) (api.OnLoadResult, error) {
				return api.OnLoadResult{Contents: &prelude, Loader: api.LoaderText}, nil
			})
		},
	}}
	res = api.Build(shell)
	if err := buildErr("shell", res); err != nil {
		return err
	}
	for _, f := range res.OutputFiles {
		fmt.Printf("wrote %s (%d bytes)\n", f.Path, len(f.Contents))
	}
	return nil
}

func buildErr(what string, res api.BuildResult) error {
	if len(res.Errors) == 0 {
		return nil
	}
	msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
	return fmt.Errorf("bundle %s:\n%s", what, strings.Join(msgs, ""))
}
