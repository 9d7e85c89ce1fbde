// Package gogen generates Go guest bindings for a WIT world: one Go package that a component
// written in Go (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared) uses to call what the world
// imports and to implement what it exports, with the canonical ABI written for it. It is what
// `atelier bindgen --lang go` runs.
//
// # Generated files
//
// types.go (any GOOS) declares the Go types of the world and the interfaces that its exports
// are implemented with; abi_wasip1.go (GOOS=wasip1 only) holds the `//go:wasmimport` functions
// and their typed wrappers, the `//go:wasmexport` shims and the lifting and lowering code. The
// generated code needs atelier/sdk/go/cabi at run time (its cabi_realloc, memory checks and
// helpers), or a copy of it under another import path (Options.CABI), as projects outside
// this module have.
//
// # Type mapping
//
//	WIT                   Go
//	bool, s8..u64, f32/64 bool, int8..uint64, float32/64
//	char                  rune
//	string                string
//	list<u8>, list<T>     []byte, []T
//	option<T>             *T (nil is none)
//	result<T, E>          Result[T, E] as a value; at a function's result (T, error) (below)
//	tuple<A, B, ...>      TupleN[A, B, ...] (fields F0, F1, ...)
//	record r              struct R, one field per WIT field
//	variant v             struct V{Tag VTag; one field per case with a payload}; constants VCase
//	enum e                named integer E with constants ECase and String()
//	flags f               named unsigned integer F with one bit constant per flag and String()
//	resource (imported)   struct R holding the handle; methods, NewR constructor, RStatic funcs, Drop
//	resource (exported)   interface R that the guest implements (see Exports)
//
// A function whose result is `result<T, E>` returns (T, error) (just error without T). An
// import's err payload arrives as *ResultError[E]; an export returns *ResultError[E] for the
// err case (any other error becomes the err payload when E is string, ErrFailed's case when E
// is absent, and traps otherwise).
//
// # Names
//
// WIT kebab-case names become Go CamelCase. An imported function of interface `host` is HostF;
// a function imported by the world itself keeps its name. A type keeps its name unless two
// types of the world share it, then both are prefixed with their interface's name. Any other
// clash of exported Go names is an error naming both.
//
// # Exports
//
// Each exported interface `api` becomes a Go interface Api, registered with ExportApi(impl);
// the world's own exported functions form the interface Exports, registered with Export(impl).
// Register from an init function. Constructors and static functions of an exported resource R
// are methods NewR and RName of the interface; R itself is a Go interface of its methods,
// implemented by any Go type. A value returned as own<R> is kept in a table until the host
// drops it, then its Drop method runs if it has one; one passed back to the guest as own<R>
// leaves the table and belongs to the callee.
//
// # Not supported
//
// map, future, stream, error-context, fixed-length lists, async functions, flags with more
// than 32 names (the component model's limit), resources declared by a world itself, and passing a borrow of a resource the
// component exports to an import: Generate refuses them with the WIT position.
package gogen

import (
	"bytes"
	"cmp"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"

	"atelier/sdk/wit"
)

// Options configure Generate.
type Options struct {
	// Package is the Go package name; empty means the world's name, without dashes.
	Package string
	// CABI is the import path of the canonical-ABI helper package; empty means
	// DefaultCABI.
	CABI string
}

// DefaultCABI is the import path of the canonical-ABI helpers in this module.
const DefaultCABI = "atelier/sdk/go/cabi"

// File is one generated Go source file.
type File struct {
	Name string
	Src  []byte
}

// gen is the state of one Generate call.
type gen struct {
	world *wit.World
	pkg   string
	cabi  string // import path of the cabi package

	idents  map[string]string         // exported Go identifier -> what it names
	defName map[*wit.TypeDef]string   // Go name of each generated definition
	defs    []*wit.TypeDef            // definitions in generation order
	guest   map[*wit.TypeDef]bool     // resources the guest exports
	owner   map[*wit.TypeDef]string   // module of a resource's [resource-*] functions
	tuples  map[int]bool              // arities of TupleN types in use
	done    map[string]bool           // lift/lower helpers already written
	implOf  map[*wit.Interface]string // registration variable of each exported interface

	types, abi, helpers bytes.Buffer

	needResult, needResultError, needErrFailed, needResultErr bool
	tmp                                                       int
}

// Generate returns the Go bindings of world w.
func Generate(w *wit.World, opts Options) ([]File, error) {
	g := &gen{
		world: w, pkg: opts.Package, cabi: cmp.Or(opts.CABI, DefaultCABI),
		idents: map[string]string{}, defName: map[*wit.TypeDef]string{}, guest: map[*wit.TypeDef]bool{},
		owner: map[*wit.TypeDef]string{}, tuples: map[int]bool{}, done: map[string]bool{},
		implOf: map[*wit.Interface]string{},
	}
	if g.pkg == "" {
		g.pkg = strings.ReplaceAll(w.Name, "-", "")
	}
	if err := g.check(); err != nil {
		return nil, err
	}
	g.collect()
	if err := g.name(); err != nil {
		return nil, err
	}
	for _, d := range g.defs {
		g.typeDecl(d)
	}
	if err := g.items(); err != nil {
		return nil, err
	}
	g.support()
	types, err := g.file("types", "", &g.types)
	if err != nil {
		return nil, err
	}
	g.abi.Write(g.helpers.Bytes())
	abi, err := g.file("abi", "//go:build wasip1\n\n", &g.abi)
	if err != nil {
		return nil, err
	}
	return []File{{Name: "types.go", Src: types}, {Name: "abi_wasip1.go", Src: abi}}, nil
}

// packages are the standard packages generated code may use, by the name it refers to them
// with; "cabi" is the canonical-ABI helper package (gen.cabi).
var packages = map[string]string{
	"errors": "errors", "fmt": "fmt", "math": "math", "strconv": "strconv", "strings": "strings",
}

// file assembles and formats one generated file, importing the packages its body uses.
func (g *gen) file(which, constraint string, body *bytes.Buffer) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by atelier bindgen from WIT world " + g.world.ID() + ". DO NOT EDIT.\n\n")
	b.WriteString(constraint)
	if which == "types" {
		b.WriteString(comment("", "Package "+g.pkg+" holds the Go bindings of the WIT world "+g.world.ID()+".", g.world.Docs))
	}
	b.WriteString("package " + g.pkg + "\n\n")
	head := b.Len()
	b.Write(body.Bytes())
	f, err := parser.ParseFile(token.NewFileSet(), which+".go", b.Bytes(), parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("gogen: generated %s.go does not parse (a bug): %w", which, err)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "cabi" {
				used[strconv.Quote(g.cabi)] = true
			} else if ok && packages[id.Name] != "" {
				used[strconv.Quote(packages[id.Name])] = true
			}
		}
		return true
	})
	if len(used) > 0 {
		imports := slices.Sorted(maps.Keys(used))
		rest := slices.Clone(b.Bytes()[head:])
		b.Truncate(head)
		b.WriteString("import (\n" + strings.Join(imports, "\n") + "\n)\n\n")
		b.Write(rest)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gogen: generated %s.go does not format (a bug): %w", which, err)
	}
	return src, nil
}

func (g *gen) temp(prefix string) string {
	g.tmp++
	return prefix + strconv.Itoa(g.tmp) + "_"
}

// interfaces returns the world's imports and exports, those of included worlds too.
func (g *gen) interfaces() (imports, exports []*wit.WorldItem) {
	return g.world.AllImports, g.world.AllExports
}

// check refuses what the generator does not support, with the WIT position.
func (g *gen) check() error {
	var errs []string
	seen := map[*wit.Type]bool{}
	var typ func(t *wit.Type, pos wit.Pos)
	typ = func(t *wit.Type, pos wit.Pos) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t.Kind {
		case wit.Map, wit.Future, wit.Stream, wit.ErrorContext:
			errs = append(errs, fmt.Sprintf("%s: %s is not supported by the Go generator", pos, t))
		case wit.List:
			if t.Len > 0 {
				errs = append(errs, fmt.Sprintf("%s: fixed-length lists are not supported by the Go generator", pos))
			}
		}
		for _, c := range []*wit.Type{t.Elem, t.Key, t.Ok, t.Err} {
			typ(c, pos)
		}
		for _, c := range t.Elems {
			typ(c, pos)
		}
		if t.Kind == wit.Named && t.Def != nil {
			d := t.Def.Underlying()
			switch d.Kind {
			case wit.DefRecord:
				for _, f := range d.Fields {
					typ(f.Type, f.Pos)
				}
			case wit.DefVariant:
				for _, c := range d.Cases {
					typ(c.Type, c.Pos)
				}
			case wit.DefFlags:
				if len(d.Names) > 32 {
					errs = append(errs, fmt.Sprintf("%s: flags %s has %d flags; the component model allows at most 32", d.Pos, d.Name, len(d.Names)))
				}
			case wit.DefAlias:
				typ(d.Alias, d.Pos)
			case wit.DefResource:
				if d.World != nil {
					errs = append(errs, fmt.Sprintf("%s: resource %s is declared by a world; declare it in an interface", d.Pos, d.Name))
				}
			}
		}
	}
	fn := func(f *wit.Func) {
		if f.Async {
			errs = append(errs, fmt.Sprintf("%s: async functions are not supported by the Go generator", f.Pos))
		}
		for _, p := range f.Params {
			typ(p.Type, p.Pos)
		}
		typ(f.Result, f.Pos)
	}
	imports, exports := g.interfaces()
	for _, it := range append(slices.Clone(imports), exports...) {
		for _, f := range itemFuncs(it) {
			fn(f)
		}
		if it.Kind == wit.ItemInterface {
			for _, d := range it.Interface.Types {
				typ(&wit.Type{Kind: wit.Named, Name: d.Name, Def: d}, d.Pos)
			}
		}
	}
	// An import cannot borrow a resource of the guest: the guest holds values, not handles.
	for _, it := range imports {
		for _, f := range itemFuncs(it) {
			for _, p := range f.Params {
				if _, d := resolved(p.Type); d != nil && isBorrow(p.Type) && g.exportedResource(d) {
					errs = append(errs, fmt.Sprintf("%s: passing borrow<%s> of a resource the component exports to an import is not supported", p.Pos, d.Name))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("gogen: world %s:\n\t%s", g.world.ID(), strings.Join(errs, "\n\t"))
	}
	return nil
}

// exportedResource reports whether the resource d belongs to an interface the world exports.
func (g *gen) exportedResource(d *wit.TypeDef) bool {
	_, exports := g.interfaces()
	for _, it := range exports {
		if it.Kind == wit.ItemInterface && d.Interface == it.Interface {
			return true
		}
	}
	return false
}

// itemFuncs returns every function of a world item: its resources' constructors, methods and
// static functions, then its freestanding functions.
func itemFuncs(it *wit.WorldItem) []*wit.Func {
	if it.Kind == wit.ItemFunc {
		return []*wit.Func{it.Func}
	}
	var fs []*wit.Func
	for _, d := range it.Interface.Types {
		if d.Kind != wit.DefResource {
			continue
		}
		if d.Constructor != nil {
			fs = append(fs, d.Constructor)
		}
		fs = append(append(fs, d.Methods...), d.Statics...)
	}
	return append(fs, it.Interface.Funcs...)
}

// collect finds every definition the bindings declare: those of the world's interfaces and
// those their functions reach, in first-seen order.
func (g *gen) collect() {
	seen := map[*wit.TypeDef]bool{}
	var def func(d *wit.TypeDef)
	var typ func(t *wit.Type)
	typ = func(t *wit.Type) {
		if t == nil {
			return
		}
		for _, c := range []*wit.Type{t.Elem, t.Key, t.Ok, t.Err} {
			typ(c)
		}
		for _, c := range t.Elems {
			typ(c)
		}
		if t.Def != nil {
			def(t.Def)
		}
	}
	def = func(d *wit.TypeDef) {
		d = d.Underlying()
		if seen[d] {
			return
		}
		seen[d] = true
		switch d.Kind {
		case wit.DefRecord:
			for _, f := range d.Fields {
				typ(f.Type)
			}
		case wit.DefVariant:
			for _, c := range d.Cases {
				typ(c.Type)
			}
		case wit.DefAlias:
			typ(d.Alias)
		}
		g.defs = append(g.defs, d)
	}
	imports, exports := g.interfaces()
	for _, d := range g.world.Types {
		def(d)
	}
	for _, it := range append(slices.Clone(imports), exports...) {
		if it.Kind == wit.ItemInterface {
			for _, d := range it.Interface.Types {
				def(d)
			}
		}
		for _, f := range itemFuncs(it) {
			for _, p := range f.Params {
				typ(p.Type)
			}
			typ(f.Result)
		}
	}
	for _, it := range exports {
		if it.Kind != wit.ItemInterface {
			continue
		}
		for _, d := range it.Interface.Types {
			if d.Kind == wit.DefResource {
				g.guest[d] = true
				g.owner[d] = "[export]" + it.Key()
			}
		}
	}
	for _, it := range imports {
		if it.Kind != wit.ItemInterface {
			continue
		}
		for _, d := range it.Interface.Types {
			if d.Kind == wit.DefResource && !g.guest[d] {
				g.owner[d] = it.Key()
			}
		}
	}
}

// claim reserves an exported Go identifier, failing when it is taken.
func (g *gen) claim(ident, what string) error {
	if prev, ok := g.idents[ident]; ok {
		return fmt.Errorf("gogen: world %s: Go name %s is used by both %s and %s", g.world.ID(), ident, prev, what)
	}
	g.idents[ident] = what
	return nil
}

// name gives every definition and every generated identifier its Go name.
func (g *gen) name() error {
	for _, n := range []string{"Result", "ResultError", "ErrFailed", "Exports", "Export"} {
		g.idents[n] = "the generated " + n
	}
	count := map[string]int{}
	for _, d := range g.defs {
		count[exported(d.Name)]++
	}
	for _, d := range g.defs {
		n := exported(d.Name)
		if count[n] > 1 && d.Interface != nil {
			n = exported(ifaceName(d.Interface)) + n
		}
		g.defName[d] = n
		if err := g.claim(n, defLabel(d)); err != nil {
			return err
		}
		var members []string
		switch d.Kind {
		case wit.DefVariant:
			if err := g.claim(n+"Tag", "the tag type of "+defLabel(d)); err != nil {
				return err
			}
			for _, c := range d.Cases {
				members = append(members, c.Name)
			}
		case wit.DefEnum, wit.DefFlags:
			for _, c := range d.Names {
				members = append(members, c.Name)
			}
		}
		for _, m := range members {
			if err := g.claim(n+exported(m), fmt.Sprintf("case %s of %s", m, defLabel(d))); err != nil {
				return err
			}
		}
	}
	return nil
}

func ifaceName(i *wit.Interface) string {
	if i.Name != "" {
		return i.Name
	}
	return i.ID()
}

func defLabel(d *wit.TypeDef) string {
	owner := ""
	if d.Interface != nil {
		owner = " of " + d.Interface.ID()
	}
	return d.Kind.String() + " " + d.Name + owner
}

// goType is the Go type of a WIT type.
func (g *gen) goType(t *wit.Type) string {
	if t == nil {
		return "struct{}"
	}
	switch t.Kind {
	case wit.Bool:
		return "bool"
	case wit.S8, wit.S16, wit.S32, wit.S64:
		return "int" + t.Kind.String()[1:]
	case wit.U8, wit.U16, wit.U32, wit.U64:
		return "uint" + t.Kind.String()[1:]
	case wit.F32:
		return "float32"
	case wit.F64:
		return "float64"
	case wit.Char:
		return "rune"
	case wit.String:
		return "string"
	case wit.List:
		if isBytes(t) {
			return "[]byte"
		}
		return "[]" + g.goType(t.Elem)
	case wit.Option:
		return "*" + g.goType(t.Elem)
	case wit.Result:
		g.needResult = true
		return "Result[" + g.goType(t.Ok) + ", " + g.goType(t.Err) + "]"
	case wit.Tuple:
		g.tuples[len(t.Elems)] = true
		args := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			args[i] = g.goType(e)
		}
		return "Tuple" + strconv.Itoa(len(t.Elems)) + "[" + strings.Join(args, ", ") + "]"
	}
	return g.defName[t.Def.Underlying()]
}

// isBytes reports whether t is list<u8>.
func isBytes(t *wit.Type) bool {
	e, d := resolved(t.Elem)
	return d == nil && e.Kind == wit.U8
}

// typeDecl declares the Go type of one definition in types.go.
func (g *gen) typeDecl(d *wit.TypeDef) {
	n := g.defName[d]
	b := &g.types
	what := "the " + d.Kind.String() + " `" + d.Name + "`"
	if d.Interface != nil {
		what += " of " + d.Interface.ID()
	}
	switch d.Kind {
	case wit.DefAlias:
		b.WriteString(comment("", n+" is "+what+".", d.Docs))
		fmt.Fprintf(b, "type %s = %s\n\n", n, g.goType(d.Alias))
	case wit.DefRecord:
		b.WriteString(comment("", n+" is "+what+".", d.Docs))
		fmt.Fprintf(b, "type %s struct {\n", n)
		for _, f := range d.Fields {
			if f.Docs != "" {
				b.WriteString(comment("\t", exported(f.Name)+": "+firstLine(f.Docs), rest(f.Docs)))
			}
			fmt.Fprintf(b, "\t%s %s\n", exported(f.Name), g.goType(f.Type))
		}
		b.WriteString("}\n\n")
	case wit.DefVariant:
		b.WriteString(comment("", n+" is "+what+": Tag says which case it holds, and the field named after that case holds its payload.", d.Docs))
		fmt.Fprintf(b, "type %s struct {\n\tTag %sTag\n", n, n)
		for _, c := range d.Cases {
			if c.Type == nil {
				continue
			}
			if c.Docs != "" {
				b.WriteString(comment("\t", caseField(c.Name)+": "+firstLine(c.Docs), rest(c.Docs)))
			}
			fmt.Fprintf(b, "\t%s %s\n", caseField(c.Name), g.goType(c.Type))
		}
		b.WriteString("}\n\n")
		names := make([]wit.Name, len(d.Cases))
		for i, c := range d.Cases {
			names[i] = wit.Name{Name: c.Name, Docs: c.Docs}
		}
		g.enumDecl(n+"Tag", n, n+"Tag is a case of "+n+".", "", names, discSize(len(d.Cases)))
		g.variantString(d, n)
	case wit.DefEnum:
		g.enumDecl(n, n, n+" is "+what+".", d.Docs, d.Names, discSize(len(d.Names)))
	case wit.DefFlags:
		g.flagsDecl(d, n, what)
	case wit.DefResource:
		if g.guest[d] {
			b.WriteString(comment("", n+" is "+what+", which this component implements: any Go type with these methods. A value returned as own<"+d.Name+"> stays alive until the host drops it; then its Drop method runs if it has one.", d.Docs))
			fmt.Fprintf(b, "type %s interface {\n", n)
			for _, f := range d.Methods {
				b.WriteString(comment("\t", exported(f.Name)+" implements the method `"+f.Name+"`.", f.Docs))
				fmt.Fprintf(b, "\t%s%s\n", exported(f.Name), g.signature(f))
			}
			b.WriteString("}\n\n")
			return
		}
		b.WriteString(comment("", n+" is "+what+", implemented by the host: a handle, valid until Drop (or until it is passed to a function that takes ownership).", d.Docs))
		fmt.Fprintf(b, "type %s struct {\n\thandle uint32\n}\n\n", n)
	}
}

// variantString declares the String method of variant n: its case's WIT name, followed by
// the payload when that is a string ("io: disk full"), so that a variant error type reads
// well as a ResultError.
func (g *gen) variantString(d *wit.TypeDef, n string) {
	b := &g.types
	fmt.Fprintf(b, "// String returns the WIT name of v's case, with its payload when that is a string.\nfunc (v %s) String() string {\n", n)
	var cases []string
	for _, c := range d.Cases {
		if c.Type != nil && g.goType(c.Type) == "string" {
			cases = append(cases, fmt.Sprintf("\tcase %s%s:\n\t\treturn %q + v.%s\n", n, exported(c.Name), c.Name+": ", caseField(c.Name)))
		}
	}
	if len(cases) > 0 {
		b.WriteString("\tswitch v.Tag {\n" + strings.Join(cases, "") + "\t}\n")
	}
	b.WriteString("\treturn v.Tag.String()\n}\n\n")
}

// enumDecl declares a named integer with one constant per name and a String method.
func (g *gen) enumDecl(n, prefix, summary, docs string, names []wit.Name, size uint32) {
	b := &g.types
	b.WriteString(comment("", summary, docs))
	fmt.Fprintf(b, "type %s uint%d\n\n", n, size*8)
	constBlock(b, "values", n, prefix, "iota", names)
	fmt.Fprintf(b, "// String returns the WIT name of v.\nfunc (v %s) String() string {\n", n)
	fmt.Fprintf(b, "\tnames := [...]string{%s}\n", quotedNames(names))
	fmt.Fprintf(b, "\tif int(v) < len(names) {\n\t\treturn names[v]\n\t}\n")
	fmt.Fprintf(b, "\treturn %q + strconv.Itoa(int(v)) + \")\"\n}\n\n", n+"(")
}

// constBlock writes the constants (the "values" or "flags", as what says) of type n, one per
// name (prefix+Name, with the name's docs), the first set to first.
func constBlock(b *bytes.Buffer, what, n, prefix, first string, names []wit.Name) {
	fmt.Fprintf(b, "// The %s of %s, in WIT order.\nconst (\n", what, n)
	for i, c := range names {
		if c.Docs != "" {
			b.WriteString(comment("\t", prefix+exported(c.Name)+": "+firstLine(c.Docs), rest(c.Docs)))
		}
		if i == 0 {
			fmt.Fprintf(b, "\t%s%s %s = %s\n", prefix, exported(c.Name), n, first)
		} else {
			fmt.Fprintf(b, "\t%s%s\n", prefix, exported(c.Name))
		}
	}
	b.WriteString(")\n\n")
}

// quotedNames returns the WIT names of names as Go string literals, joined by ", ".
func quotedNames(names []wit.Name) string {
	quoted := make([]string, len(names))
	for i, c := range names {
		quoted[i] = strconv.Quote(c.Name)
	}
	return strings.Join(quoted, ", ")
}

// flagsDecl declares a flags type: an unsigned integer with one bit per flag.
func (g *gen) flagsDecl(d *wit.TypeDef, n, what string) {
	b := &g.types
	bits := 8
	switch {
	case len(d.Names) > 16:
		bits = 32
	case len(d.Names) > 8:
		bits = 16
	}
	b.WriteString(comment("", n+" is "+what+": a set of flags, one bit each.", d.Docs))
	fmt.Fprintf(b, "type %s uint%d\n\n", n, bits)
	constBlock(b, "flags", n, n, "1 << iota", d.Names)
	fmt.Fprintf(b, "// String returns the WIT names of the flags set in v, joined by \"|\".\nfunc (v %s) String() string {\n", n)
	fmt.Fprintf(b, "\tvar set []string\n\tfor i, name := range [...]string{%s} {\n", quotedNames(d.Names))
	fmt.Fprintf(b, "\t\tif v&(1<<i) != 0 {\n\t\t\tset = append(set, name)\n\t\t}\n\t}\n\treturn strings.Join(set, \"|\")\n}\n\n")
}

// caseField is the Go field of a variant case's payload ("tag" would clash with Tag).
func caseField(name string) string {
	if f := exported(name); f != "Tag" {
		return f
	}
	return "TagValue"
}

func firstLine(docs string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(docs), "\n")
	return line
}

func rest(docs string) string {
	_, r, _ := strings.Cut(strings.TrimSpace(docs), "\n")
	return r
}

// resultSides returns the ok and err types of a function result that is a `result`, and
// whether it is one.
func resultSides(t *wit.Type) (ok, err *wit.Type, is bool) {
	if t == nil {
		return nil, nil, false
	}
	r, d := resolved(t)
	if d != nil || r.Kind != wit.Result {
		return nil, nil, false
	}
	return r.Ok, r.Err, true
}

// funcResult is the WIT result type of f, with a constructor's implicit own<R>.
func funcResult(f *wit.Func) *wit.Type {
	if f.Result == nil && f.Kind == wit.Constructor {
		return &wit.Type{Kind: wit.Own, Name: f.Resource.Name, Def: f.Resource}
	}
	return f.Result
}

// signature is the Go signature of f without the name: "(x int32, y string) (string, error)".
func (g *gen) signature(f *wit.Func) string {
	params := make([]string, len(f.Params))
	for i, p := range f.Params {
		params[i] = local(p.Name) + " " + g.goType(p.Type)
	}
	s := "(" + strings.Join(params, ", ") + ")"
	rt := funcResult(f)
	if rt == nil {
		return s
	}
	if ok, _, is := resultSides(rt); is {
		if ok == nil {
			return s + " error"
		}
		return s + " (" + g.goType(ok) + ", error)"
	}
	return s + " " + g.goType(rt)
}

// support declares the generic types the bindings used.
func (g *gen) support() {
	b := &g.types
	if g.needResult {
		b.WriteString("// Result is a WIT result<T, E> held as a value: the Ok payload, or the Err payload when IsErr.\n")
		b.WriteString("// A side without a type in WIT is struct{}.\n")
		b.WriteString("type Result[T, E any] struct {\n\tOk    T\n\tErr   E\n\tIsErr bool\n}\n\n")
	}
	if g.needResultError {
		b.WriteString("// ResultError is the err payload of a function's WIT result as a Go error.\n")
		b.WriteString("type ResultError[E any] struct {\n\tValue E\n}\n\n")
		b.WriteString("// Error returns the payload when it is a string, a fmt.Stringer or an error, else a generic\n")
		b.WriteString("// message (the package does not import fmt, to keep guests small).\n")
		fmt.Fprintf(b, `func (e *ResultError[E]) Error() string {
	switch v := any(e.Value).(type) {
	case string:
		return v
	case interface{ String() string }:
		return v.String()
	case error:
		return v.Error()
	}
	return %q
}

`, g.pkg+": the function returned an error (see ResultError.Value)")
	}
	if g.needErrFailed {
		fmt.Fprintf(b, "// ErrFailed is the error of a function whose WIT result<T> (without an error type) is err.\n")
		fmt.Fprintf(b, "var ErrFailed = errors.New(%q)\n\n", g.pkg+": the function returned an error")
	}
	arities := make([]int, 0, len(g.tuples))
	for n := range g.tuples {
		arities = append(arities, n)
	}
	slices.Sort(arities)
	for _, n := range arities {
		params, fields := make([]string, n), make([]string, n)
		for i := range n {
			params[i] = "T" + strconv.Itoa(i)
			fields[i] = "\tF" + strconv.Itoa(i) + " T" + strconv.Itoa(i) + "\n"
		}
		fmt.Fprintf(b, "// Tuple%d is a WIT tuple of %d elements.\ntype Tuple%d[%s any] struct {\n%s}\n\n", n, n, n, strings.Join(params, ", "), strings.Join(fields, ""))
	}
	if g.needResultErr {
		g.abi.WriteString(`// resultErr converts the error an export returned into the err payload of its WIT result:
// a *ResultError's value, else for a string error type the whole message (so that an error
// that wraps an import's keeps its context), else the value of a *ResultError it wraps.
func resultErr[E any](fn string, err error) E {
	if re, ok := err.(*ResultError[E]); ok {
		return re.Value
	}
	if s, ok := any(err.Error()).(E); ok {
		return s
	}
	var re *ResultError[E]
	if errors.As(err, &re) {
		return re.Value
	}
	panic(fn + " returned the error \"" + err.Error() + "\", which is not a *ResultError of its WIT error type")
}

`)
	}
}
