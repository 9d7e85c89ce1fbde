// Package tsdecl writes TypeScript declarations for a component's exported functions, so that
// people and agents can see how to call a gadget from JavaScript. The types follow one of two
// value mappings (see docs/api.md):
//
//   - JSON: what Code Mode snippets and JS gadgets see through bindings (values cross as
//     JSON): integers and floats are numbers (u64/s64 beyond 2^53 lose precision), list<u8> is
//     an array of numbers as an argument and a base64 string as a result.
//   - CapnWeb: what a Cap'n Web client of connect() sees: u64/s64 are numbers, or bigints
//     beyond 2^53; list<u8> is a Uint8Array.
//
// Both: records are objects with the WIT field names, option<T> is `T | null`
// (option<option<T>> is `{some: T | null} | null`), a function's result<T, E> is its T with the
// E thrown (result elsewhere is `{ok: T} | {err: E}`), enums are string unions, variants are
// `{tag, val}` unions, flags are arrays of flag names, tuples are arrays, resources are handles
// (numbers). Named types (records, variants, enums, flags) become type aliases in PascalCase.
package tsdecl

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"atelier/host/runtime/wit"
)

// Mapping selects how WIT values appear in JavaScript.
type Mapping int

// The mappings.
const (
	// JSON is the mapping of Code Mode and bindings.
	JSON Mapping = iota
	// CapnWeb is the mapping of a Cap'n Web client.
	CapnWeb
)

// Name turns a WIT kebab-case name into the JavaScript convention: "make-counter" ->
// "makeCounter"; a package prefix and a version are dropped ("acme:app/api@1.0.0" -> "api").
func Name(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name, _, _ = strings.Cut(name, "@")
	var b strings.Builder
	up := false
	for _, r := range name {
		if r == '-' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// typeName is the PascalCase name of a named WIT type.
func typeName(name string) string {
	n := Name(name)
	if n == "" {
		return "T"
	}
	r := []rune(n)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// Declare returns the declarations of a binding called name whose functions are exports (a
// component's exports: functions, and interfaces of functions): the named types it uses, then
// `declare const NAME: {...}`.
func Declare(name string, exports []wit.Item, m Mapping) string {
	w := &writer{m: m, named: map[string]bool{}}
	var body strings.Builder
	for _, it := range exports {
		switch it.Kind {
		case wit.ItemFunc:
			w.method(&body, "  ", Name(it.Name), it.Name, it.Func)
		case wit.ItemInstance:
			if m == CapnWeb {
				fmt.Fprintf(&body, "  %s: {\n", property(Name(it.Name)))
			}
			for _, f := range it.Exports {
				if f.Kind != wit.ItemFunc {
					continue
				}
				if m == CapnWeb {
					w.method(&body, "    ", Name(f.Name), f.Name, f.Func)
				} else {
					w.method(&body, "  ", Name(it.Name)+"."+Name(f.Name), it.Name+"#"+f.Name, f.Func)
				}
			}
			if m == CapnWeb {
				body.WriteString("  };\n")
			}
		}
	}
	var out strings.Builder
	for _, d := range w.decls {
		out.WriteString(d)
	}
	fmt.Fprintf(&out, "declare const %s: {\n%s};\n", property(name), body.String())
	return out.String()
}

// DeclareUntyped returns the declarations of a binding whose methods have no WIT types (a JS
// gadget's): every method takes and returns JSON values.
func DeclareUntyped(name string, methods []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "declare const %s: {\n", property(name))
	for _, m := range slices.Sorted(slices.Values(methods)) {
		fmt.Fprintf(&b, "  %s(...args: unknown[]): Promise<unknown>;\n", property(m))
	}
	b.WriteString("};\n")
	return b.String()
}

// writer collects the named types a declaration uses.
type writer struct {
	m     Mapping
	named map[string]bool
	decls []string
}

// method writes one function as a method signature with a comment holding its WIT signature.
func (w *writer) method(b *strings.Builder, indent, name, witName string, ft *wit.FuncType) {
	params := make([]string, len(ft.Params))
	for i, p := range ft.Params {
		params[i] = ident(Name(p.Name)) + ": " + w.ts(p.Type, true)
	}
	ret, throws := "void", ""
	if r := ft.Result; r != nil && r.Kind == wit.Result {
		if r.Ok != nil {
			ret = w.ts(r.Ok, false)
		}
		throws = "unknown"
		if r.Err != nil {
			throws = w.ts(r.Err, false)
		}
	} else if r != nil {
		ret = w.ts(r, false)
	}
	fmt.Fprintf(b, "%s/** %s: %s", indent, witName, ft)
	if throws != "" {
		fmt.Fprintf(b, " @throws %s (the result's error)", throws)
	}
	fmt.Fprintf(b, " */\n%s%s(%s): Promise<%s>;\n", indent, property(name), strings.Join(params, ", "), ret)
}

// ts renders t; in is true for argument positions.
func (w *writer) ts(t *wit.Type, in bool) string {
	if t.Name != "" {
		switch t.Kind {
		case wit.Record, wit.Variant, wit.Enum, wit.Flags:
			n := typeName(t.Name)
			if w.m == JSON && in && hasBytes(t) {
				n += "Input" // list<u8> goes in as numbers and comes out as base64
			}
			if !w.named[n] {
				w.named[n] = true
				w.decls = append(w.decls, fmt.Sprintf("/** WIT %s %s */\ntype %s = %s;\n", t.Kind, t.Name, n, w.shape(t, in)))
			}
			return n
		}
	}
	return w.shape(t, in)
}

// shape renders t's structure (never its name).
func (w *writer) shape(t *wit.Type, in bool) string {
	switch t.Kind {
	case wit.Bool:
		return "boolean"
	case wit.S8, wit.U8, wit.S16, wit.U16, wit.S32, wit.U32, wit.F32, wit.F64:
		return "number"
	case wit.S64, wit.U64:
		if w.m == CapnWeb {
			return "number | bigint"
		}
		return "number"
	case wit.Char, wit.String:
		return "string"
	case wit.List:
		if t.Elem.Kind == wit.U8 {
			switch {
			case w.m == CapnWeb:
				return "Uint8Array"
			case in:
				return "number[]"
			default:
				return "string /* base64 */"
			}
		}
		return "Array<" + w.ts(t.Elem, in) + ">"
	case wit.Record:
		fields := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = property(f.Name) + ": " + w.ts(f.Type, in)
		}
		return "{ " + strings.Join(fields, "; ") + " }"
	case wit.Tuple:
		elems := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			elems[i] = w.ts(e, in)
		}
		return "[" + strings.Join(elems, ", ") + "]"
	case wit.Variant:
		cases := make([]string, len(t.Cases))
		for i, c := range t.Cases {
			if c.Type == nil {
				cases[i] = fmt.Sprintf("{ tag: %q }", c.Name)
			} else {
				cases[i] = fmt.Sprintf("{ tag: %q; val: %s }", c.Name, w.ts(c.Type, in))
			}
		}
		return strings.Join(cases, " | ")
	case wit.Enum:
		return quoted(t.Names)
	case wit.Flags:
		return "Array<" + quoted(t.Names) + ">"
	case wit.Option:
		if t.Elem.Kind == wit.Option {
			return "{ some: " + w.ts(t.Elem.Elem, in) + " | null } | null"
		}
		return w.ts(t.Elem, in) + " | null"
	case wit.Result:
		ok, err := "null", "null"
		if t.Ok != nil {
			ok = w.ts(t.Ok, in)
		}
		if t.Err != nil {
			err = w.ts(t.Err, in)
		}
		return "{ ok: " + ok + " } | { err: " + err + " }"
	case wit.Own, wit.Borrow:
		return "number /* handle of resource " + t.Resource + " */"
	}
	return "unknown"
}

// hasBytes reports whether a record holds a list<u8> anywhere (its JSON type differs by
// direction then).
func hasBytes(t *wit.Type) bool {
	seen := map[*wit.Type]bool{}
	var walk func(*wit.Type) bool
	walk = func(t *wit.Type) bool {
		if t == nil || seen[t] {
			return false
		}
		seen[t] = true
		if t.Kind == wit.List && t.Elem.Kind == wit.U8 {
			return true
		}
		kids := append([]*wit.Type{t.Elem, t.Ok, t.Err}, t.Elems...)
		for _, f := range t.Fields {
			kids = append(kids, f.Type)
		}
		for _, c := range t.Cases {
			kids = append(kids, c.Type)
		}
		return slices.ContainsFunc(kids, walk)
	}
	return walk(t)
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " | ")
}

// isIdent reports whether s is a plain JavaScript identifier.
func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// property renders a property or method name, quoted unless it is an identifier.
func property(s string) string {
	if isIdent(s) {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// ident renders a parameter name (which must be an identifier).
func ident(s string) string {
	if isIdent(s) && !reserved[s] {
		return s
	}
	return "_" + strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, s)
}

// reserved are JavaScript words that cannot name a parameter.
var reserved = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true, "debugger": true,
	"default": true, "delete": true, "do": true, "else": true, "enum": true, "export": true, "extends": true,
	"false": true, "finally": true, "for": true, "function": true, "if": true, "import": true, "in": true,
	"instanceof": true, "new": true, "null": true, "return": true, "super": true, "switch": true, "this": true,
	"throw": true, "true": true, "try": true, "typeof": true, "var": true, "void": true, "while": true, "with": true,
}
