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
// `{tag, val}` unions, flags are arrays of flag names, tuples are arrays. Named types (records,
// variants, enums, flags) become type aliases in PascalCase.
//
// Resources follow the kernel's RPC surface: over Cap'n Web an exported resource R of interface
// I is the property `i.r` holding its constructor (`"new"`) and static functions, and a handle
// is a stub declared as `interface R` with one method per WIT method. JSON values cannot carry
// handles, so in the JSON mapping the functions that take or return a resource are listed in a
// comment instead of declared.
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

// TypeName is the PascalCase name of a named WIT type ("deck-info" -> "DeckInfo").
func TypeName(name string) string {
	n := Name(name)
	if n == "" {
		return "T"
	}
	r := []rune(n)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// Declare returns the declarations of a binding called name whose functions are exports (a
// component's exports: functions, and interfaces of functions): the named types and resource
// stubs it uses, then `declare const NAME: {...}`. Every member is declared once: an export
// whose name collides with an earlier one's (see Distinct) is left out and named in a comment.
func Declare(name string, exports []wit.Item, m Mapping) string {
	w := &writer{m: m, named: map[string]bool{}, stubs: map[string]*stub{}, stubNames: map[string]bool{}}
	var body strings.Builder
	exports, cols := Distinct(exports)
	for _, c := range cols {
		fmt.Fprintf(&body, "  // Not reachable: %q; %q has the name.\n", c.Export, c.Taken)
	}
	for _, it := range exports {
		switch it.Kind {
		case wit.ItemFunc:
			w.scope = ""
			w.funcs(&body, "  ", "", []wit.Item{it})
		case wit.ItemInstance:
			w.scope = it.Name
			if m == CapnWeb {
				fmt.Fprintf(&body, "  %s: {\n", Property(Name(it.Name)))
				w.funcs(&body, "    ", "", it.Exports)
				body.WriteString("  };\n")
			} else {
				w.funcs(&body, "  ", Name(it.Name)+".", it.Exports)
			}
		}
	}
	for _, st := range w.order {
		w.declareStub(st)
	}
	if len(w.skipped) > 0 {
		fmt.Fprintf(&body, "  // Not callable with JSON values (they take or return resources, which only a connect() stub can hold): %s.\n", strings.Join(w.skipped, ", "))
	}
	var out strings.Builder
	for _, d := range w.decls {
		out.WriteString(d)
	}
	fmt.Fprintf(&out, "declare const %s: {\n%s};\n", Property(name), body.String())
	return out.String()
}

// stub is an exported resource: its methods become an interface, the methods of its handles.
type stub struct {
	ts, res string // the interface's name, the resource's
	methods []stubMethod
}

// stubMethod is one method of a stub.
type stubMethod struct {
	name, witName string
	ft            *wit.FuncType
}

// Member names an exported function, given its component-model name, as the kernel's RPC
// surface does: a plain function is the member Name(name) of its scope (res ""); a resource
// res's constructor ("new") and static functions are members of the property Name(res) of
// that scope; a method (method true) is a member of res's handles.
func Member(name string) (res, member string, method bool) {
	kind, res, fn := wit.SplitResourceFunc(name)
	switch kind {
	case "":
		return "", Name(name), false
	case "[constructor]":
		return res, "new", false
	}
	return res, Name(fn), kind == "[method]"
}

// funcs writes the functions among items, which belong to the current scope; the RPC name of a
// function is prefix + its member name (JSON mapping). A resource's constructor and static
// functions go into a property named after the resource; its methods into the resource's stub.
func (w *writer) funcs(b *strings.Builder, indent, prefix string, items []wit.Item) {
	type static struct {
		member string
		f      wit.Item
	}
	type statics struct {
		res   string
		funcs []static
	}
	var props []*statics
	for _, f := range items {
		if f.Kind != wit.ItemFunc {
			continue
		}
		res, member, method := Member(f.Name)
		switch {
		case res == "":
			w.method(b, indent, prefix, member, w.witName(f.Name), f.Func, false)
		case method: // only a handle (CapnWeb) has methods
			if w.m == JSON {
				continue
			}
			s := w.stub(res)
			s.methods = append(s.methods, stubMethod{name: member, witName: w.witName(f.Name), ft: f.Func})
		default:
			i := slices.IndexFunc(props, func(p *statics) bool { return p.res == res })
			if i < 0 {
				i = len(props)
				props = append(props, &statics{res: res})
			}
			props[i].funcs = append(props[i].funcs, static{member, f})
		}
	}
	for _, p := range props {
		if w.m == CapnWeb {
			fmt.Fprintf(b, "%s%s: {\n", indent, Property(Name(p.res)))
		}
		for _, s := range p.funcs {
			if w.m == CapnWeb {
				w.method(b, indent+"  ", "", s.member, w.witName(s.f.Name), s.f.Func, false)
			} else {
				w.method(b, indent, prefix+Name(p.res)+".", s.member, w.witName(s.f.Name), s.f.Func, false)
			}
		}
		if w.m == CapnWeb {
			fmt.Fprintf(b, "%s};\n", indent)
		}
	}
}

// witName is the name of an export in the WIT signature comment: "iface#fn" for a function of
// an interface in the JSON mapping (which flattens interfaces), else its name.
func (w *writer) witName(name string) string {
	if w.scope == "" || w.m == CapnWeb {
		return name
	}
	return w.scope + "#" + name
}

// stub returns the stub of resource res of the current scope, naming it on first use: the
// resource's name in PascalCase, prefixed with its interface's when another scope took it.
func (w *writer) stub(res string) *stub {
	key := w.scope + "#" + res
	if s := w.stubs[key]; s != nil {
		return s
	}
	n := TypeName(res)
	if w.stubNames[n] || w.named[n] {
		n = TypeName(Name(w.scope)) + n
	}
	w.stubNames[n] = true
	s := &stub{ts: n, res: res}
	w.stubs[key] = s
	w.order = append(w.order, s)
	return s
}

// declareStub adds the interface of s (once every export was seen: its methods are known).
func (w *writer) declareStub(s *stub) {
	var b strings.Builder
	fmt.Fprintf(&b, "/** WIT resource %s: a handle, held as a Cap'n Web stub (dispose it to drop the resource). */\ninterface %s {\n", s.res, s.ts)
	for _, m := range s.methods {
		w.method(&b, "  ", "", m.name, m.witName, m.ft, true)
	}
	b.WriteString("  /** Drops the handle: the resource's destructor runs in the gadget, once. */\n  [Symbol.dispose](): void;\n}\n")
	w.decls = append(w.decls, b.String())
}

// DeclareUntyped returns the declarations of a binding whose methods have no WIT types (a JS
// gadget's): every method takes and returns JSON values.
func DeclareUntyped(name string, methods []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "declare const %s: {\n", Property(name))
	for _, m := range slices.Sorted(slices.Values(methods)) {
		fmt.Fprintf(&b, "  %s(...args: unknown[]): Promise<unknown>;\n", Property(m))
	}
	b.WriteString("};\n")
	return b.String()
}

// writer collects the named types and resource stubs a declaration uses.
type writer struct {
	m     Mapping
	named map[string]bool
	decls []string
	// scope is the exported interface being written ("" at top level); stubs are the
	// resources by scope#name, stubNames the interface names they took.
	scope     string
	stubs     map[string]*stub
	order     []*stub
	stubNames map[string]bool
	// skipped are the RPC names of functions the JSON mapping cannot call.
	skipped []string
}

// method writes one function as a method signature called prefix+name (a property name) with
// a comment holding its WIT signature; a resource method's `self` is left out (self set).
func (w *writer) method(b *strings.Builder, indent, prefix, name, witName string, ft *wit.FuncType, self bool) {
	if w.m == JSON && wit.FuncHasResource(ft) {
		w.skipped = append(w.skipped, prefix+name)
		return
	}
	in := ft.Params
	if self && len(in) > 0 {
		in = in[1:]
	}
	params := make([]string, len(in))
	for i, p := range in {
		params[i] = Ident(Name(p.Name)) + ": " + w.ts(p.Type, true)
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
	fmt.Fprintf(b, " */\n%s%s(%s): Promise<%s>;\n", indent, Property(prefix+name), strings.Join(params, ", "), ret)
}

// ts renders t; in is true for argument positions.
func (w *writer) ts(t *wit.Type, in bool) string {
	if t.Name != "" {
		switch t.Kind {
		case wit.Record, wit.Variant, wit.Enum, wit.Flags:
			n := TypeName(t.Name)
			if w.m == JSON && in && hasBytes(t) {
				n += "Input" // list<u8> goes in as numbers and comes out as base64
			}
			if w.stubNames[n] { // another scope's resource took the name, as in stub
				n = TypeName(Name(w.scope)) + n
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
			fields[i] = Property(f.Name) + ": " + w.ts(f.Type, in)
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
		if w.m == CapnWeb { // the JSON mapping declares no function with handles
			return w.stub(t.Resource).ts
		}
	}
	return "unknown"
}

// hasBytes reports whether a record holds a list<u8> anywhere (its JSON type differs by
// direction then).
func hasBytes(t *wit.Type) bool {
	return wit.Contains(t, func(t *wit.Type) bool { return t.Kind == wit.List && t.Elem.Kind == wit.U8 })
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

// Property renders a property or method name, quoted unless it is an identifier other than
// `new` (which would declare a constructor in a type).
func Property(s string) string {
	if isIdent(s) && s != "new" {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// Ident renders a name as a JavaScript identifier usable for a parameter or a binding: a
// reserved word or a name that is not an identifier gets a leading underscore ("class" ->
// "_class").
func Ident(s string) string {
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
