package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"atelier/sdk/templates"
)

func newCommand() command {
	return command{
		name:    "new",
		usage:   "gadget|gatekeeper --lang go|js|ts|c [--format component|extism] [--dir DIR] NAME",
		summary: "make a gadget or gatekeeper project from a template",
		details: `Writes a working project into ./NAME (or --dir): a small counter gadget, or a tiny
gatekeeper, with its WIT world (wit/), the atelier WIT packages it builds against (wit/deps/),
a README with the build, deploy and call commands, and atelier.json, which 'atelier build'
reads. Gadgets: go, js, ts, c. Gatekeepers: ` + strings.Join(templates.Langs("gatekeeper"), ", ") + `.

A Go project is its own module. A Go gadget's bindings are generated from its world by
'atelier build' into bindings/; the canonical ABI helpers they use are copied into
internal/cabi. A Go gatekeeper gets hand-written bindings of the gatekeeper world and of
atelier:host in internal/ (gatekeeper, host, cabi), with the types both gatekeeper formats
share in internal/connector and the log levels in internal/loglevel.

A gatekeeper is a component unless --format extism (Go only): then it is an Extism plugin (a
core module with JSON plugin functions; the Extism ABI is copied into internal/extism, next to
internal/connector and internal/loglevel), and manifest.json says "format": "extism". Its code
is the same as the component's.

Examples:
  atelier new gadget --lang ts counter && cd counter && atelier build
  atelier new gatekeeper --lang go notes
  atelier new gatekeeper --lang go --format extism notes`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			lang := fs.String("lang", "", "the project's language: go, js, ts or c")
			dir := fs.String("dir", "", "the folder to create (default: ./NAME)")
			format := fs.String("format", "", "a gatekeeper's package format: component (default) or extism (Go only)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{"want a kind (gadget or gatekeeper) and a name"}
				}
				if *lang == "" {
					return usageError{"--lang is required: " + strings.Join(templates.Langs(args[0]), ", ")}
				}
				p := templates.Project{Kind: args[0], Lang: *lang, Name: args[1], Format: *format}
				target := *dir
				if target == "" {
					target = p.Name
				}
				written, err := templates.Create(target, p)
				if err != nil {
					return err
				}
				out := stdio(ctx).out
				what := p.LangName()
				if p.Extism() {
					what += ", an Extism plugin"
				}
				fmt.Fprintf(out, "Created %s %s (%s) in %s:\n", p.Kind, p.Name, what, target)
				for _, f := range written {
					if !strings.HasPrefix(f, "wit/deps/") && !strings.HasPrefix(f, "internal/") {
						fmt.Fprintf(out, "  %s\n", filepath.Join(target, f))
					}
				}
				fmt.Fprintf(out, "\nNext:\n  cd %s\n  atelier build\n", target)
				fmt.Fprintf(out, "  %s\n", deployHint(p.Kind, p.Name, templates.Grants(p.Kind, p.Lang)))
				return nil
			}
		},
	}
}

// deployHint is the command that deploys (gadget) or installs (gatekeeper) what `atelier
// build` wrote for the project name.
func deployHint(kind, name string, grants []string) string {
	if kind == "gatekeeper" {
		return fmt.Sprintf("atelier gatekeeper install build/%s.gkp   (as admin)", name)
	}
	cmd := fmt.Sprintf("atelier gadget deploy %s build/%s.wasm", name, name)
	if len(grants) > 0 {
		cmd += " --grant " + strings.Join(grants, ",")
	}
	return cmd
}
