package jsruntime

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// SyntaxError lists the problems that kept a TypeScript file from being stripped, each at its
// 1-based line and column in the file.
type SyntaxError struct {
	File     string
	Problems []Problem
}

// Problem is one error esbuild reported.
type Problem struct {
	Line, Column int
	Message      string
}

// Error renders "file:line:column: message", one problem per line.
func (e *SyntaxError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, p.Line, p.Column, p.Message)
	}
	return b.String()
}

// Strip turns the TypeScript source of file name into JavaScript: types are removed, nothing
// is lowered or bundled, import and export statements stay as they are. A file whose name does
// not end in ".ts" is returned unchanged. Errors are a *SyntaxError.
func Strip(name, source string) (string, error) {
	js, _, err := strip(name, source)
	return js, err
}

// strip is Strip that also returns the source map from the output back to source (nil for
// JavaScript, which runs as it was written).
func strip(name, source string) (string, *sourceMap, error) {
	if !strings.HasSuffix(name, ".ts") {
		return source, nil, nil
	}
	r := api.Transform(source, api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ESNext,
		Sourcefile: name,
		Sourcemap:  api.SourceMapExternal,
		LogLevel:   api.LogLevelSilent,
	})
	if len(r.Errors) > 0 {
		se := &SyntaxError{File: name}
		for _, m := range r.Errors {
			p := Problem{Message: m.Text}
			if m.Location != nil {
				// esbuild counts lines from 1 and columns from 0, in bytes.
				p.Line, p.Column = m.Location.Line, m.Location.Column+1
			}
			se.Problems = append(se.Problems, p)
		}
		return "", nil, se
	}
	sm, err := parseSourceMap(r.Map)
	if err != nil {
		return "", nil, fmt.Errorf("strip %s: %w", name, err)
	}
	return string(r.Code), sm, nil
}

// jsName is the name a stripped file is loaded under: "util.ts" becomes "util.js", so that
// imports written the usual TypeScript way ("./util.js") find it.
func jsName(name string) string {
	if base, ok := strings.CutSuffix(name, ".ts"); ok {
		return base + ".js"
	}
	return name
}
