package gogen

import (
	"go/token"
	"strings"
	"unicode"
)

// exported turns a WIT kebab-case name into an exported Go identifier: "get-item" -> "GetItem".
// Acronyms are not guessed: "http-url" -> "HttpUrl".
func exported(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "-") {
		if part == "" {
			continue
		}
		r := []rune(part)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	s := b.String()
	if s == "" || !unicode.IsLetter([]rune(s)[0]) {
		s = "X" + s
	}
	return s
}

// local turns a WIT name into an unexported Go identifier for parameters: "max-len" -> "maxLen";
// Go keywords and predeclared names get a trailing "Arg" ("type" -> "typeArg").
func local(name string) string {
	e := exported(name)
	r := []rune(e)
	r[0] = unicode.ToLower(r[0])
	s := string(r)
	if token.IsKeyword(s) || predeclared[s] {
		s += "Arg"
	}
	return s
}

// predeclared lists Go's predeclared identifiers and the package names the generated code
// imports, which parameter names must not shadow.
var predeclared = map[string]bool{
	"bool": true, "byte": true, "rune": true, "string": true, "error": true, "any": true,
	"int8": true, "int16": true, "int32": true, "int64": true, "uint8": true, "uint16": true,
	"uint32": true, "uint64": true, "float32": true, "float64": true, "int": true, "uint": true,
	"true": true, "false": true, "nil": true, "iota": true, "len": true, "cap": true, "new": true,
	"make": true, "append": true, "copy": true, "delete": true, "panic": true, "recover": true,
	"print": true, "println": true, "close": true, "clear": true, "min": true, "max": true,
	"complex": true, "real": true, "imag": true, "cabi": true, "math": true, "fmt": true, "errors": true,
}

// comment renders a doc comment: the summary line, then the WIT documentation (if any) as a
// second paragraph. Each line is prefixed with indent and "// ".
func comment(indent, summary, docs string) string {
	var b strings.Builder
	b.WriteString(indent + "// " + summary + "\n")
	docs = strings.TrimSpace(docs)
	if docs != "" {
		b.WriteString(indent + "//\n")
		for _, line := range strings.Split(docs, "\n") {
			line = strings.TrimRight(line, " \t")
			if line == "" {
				b.WriteString(indent + "//\n")
				continue
			}
			b.WriteString(indent + "// " + line + "\n")
		}
	}
	return b.String()
}
