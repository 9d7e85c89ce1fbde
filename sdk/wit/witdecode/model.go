package witdecode

import (
	"fmt"
	"strconv"
	"strings"

	"atelier/sdk/wit"
)

// builder turns the scopes read from the file into the wit model.
type builder struct {
	res    *wit.Resolve
	root   *wit.Package
	world  *wit.World
	pkgs   map[string]*wit.Package
	ifaces map[*scope]*wit.Interface
	named  map[string]*wit.Interface // by package and name
	lines  []Line
	// rendered counts the parts of types written out, against maxRendered.
	rendered int
}

// fail gives up on the file: Decode turns it into an error.
func fail(format string, args ...any) {
	panic(decodeError{fmt.Errorf(format, args...)})
}

// Line is one import or export of the component, or one member of an imported or exported
// interface, in the component's own order: `wasi:io/streams@0.2.0.[method]output-stream.write:
// func(self: borrow<output-stream>, ...) -> ...`.
type Line struct {
	// Export is false for an import.
	Export bool
	// Interface is the interface's name ("wasi:io/poll@0.2.0", or a plain name for an inline
	// interface), "" for a function or type of the world itself.
	Interface string
	// Name is the member's name as the component spells it ("[method]r.get", "point").
	Name string
	// Kind is "func", "type" or "resource" (or the sort, "instance", "component", for items
	// WIT has no words for).
	Kind string
	// Text is what follows the colon: `func(a: thing) -> thing`, `type record point { ... }`.
	Text string
}

// String renders the line as `atelier inspect` prints it, without the import/export word.
func (l Line) String() string {
	name := l.Name
	if l.Interface != "" {
		name = l.Interface + "." + l.Name
	}
	return name + ": " + l.Text
}

func newBuilder() *builder {
	root := &wit.Package{Name: wit.PackageName{Namespace: "root", Name: "component"}}
	w := &wit.World{Name: "root", Package: root}
	root.Worlds = []*wit.World{w}
	return &builder{
		res:    &wit.Resolve{Packages: []*wit.Package{root}},
		root:   root,
		world:  w,
		pkgs:   map[string]*wit.Package{},
		ifaces: map[*scope]*wit.Interface{},
		named:  map[string]*wit.Interface{},
	}
}

// splitInterface splits "ns:pkg/name@1.2.3" into its package and interface name; ok is false
// for a plain name.
func splitInterface(id string) (wit.PackageName, string, bool) {
	colon := strings.IndexByte(id, ':')
	slash := strings.IndexByte(id, '/')
	if colon <= 0 || slash < colon+2 || slash == len(id)-1 {
		return wit.PackageName{}, "", false
	}
	pn := wit.PackageName{Namespace: id[:colon], Name: id[colon+1 : slash]}
	name := id[slash+1:]
	if at := strings.IndexByte(name, '@'); at >= 0 {
		pn.Version = name[at+1:]
		name = name[:at]
	}
	if name == "" || strings.ContainsAny(name, "/:@") {
		return wit.PackageName{}, "", false
	}
	return pn, name, true
}

// iface returns the interface declared by s under the name id, making it (with its package)
// on first sight.
func (b *builder) iface(s *scope, id string, exported bool) *wit.Interface {
	if i, ok := b.ifaces[s]; ok {
		return i
	}
	pn, name, ok := splitInterface(id)
	i := &wit.Interface{Name: name}
	if !ok {
		i.Name = ""
		i.World = b.world
	} else {
		p := b.pkgs[pn.String()]
		if p == nil {
			p = &wit.Package{Name: pn}
			b.pkgs[pn.String()] = p
			b.res.Packages = append(b.res.Packages, p)
		}
		// the same interface imported and exported is declared once
		if prev := b.named[pn.String()+"/"+name]; prev != nil {
			b.ifaces[s] = prev
			return prev
		}
		i.Package = p
		p.Interfaces = append(p.Interfaces, i)
		b.named[pn.String()+"/"+name] = i
	}
	b.ifaces[s] = i
	return i
}

// ctx is the interface (or the world) whose members are being converted.
type ctx struct {
	b     *builder
	owner *scope
	iface *wit.Interface // nil for the world
	id    string         // interface name for lines, "" for the world
	defs  *[]*wit.TypeDef
	funcs *[]*wit.Func
	// resources are the resources among defs, by name.
	resources map[string]*wit.TypeDef
}

func (b *builder) build(top *scope) {
	for _, export := range []bool{false, true} {
		items := top.imports
		if export {
			items = top.exports
		}
		wc := &ctx{b: b, owner: top, defs: &b.world.Types}
		for _, e := range items {
			switch e.sort {
			case sortInstance:
				b.instanceItem(e, export)
			case sortFunc:
				var fs []*wit.Func
				wc.funcs = &fs
				wc.member(e, export)
				for _, f := range fs {
					it := &wit.WorldItem{Kind: wit.ItemFunc, Func: f}
					if export {
						b.world.Exports = append(b.world.Exports, it)
					} else {
						b.world.Imports = append(b.world.Imports, it)
					}
				}
			case sortType:
				wc.member(e, export)
			default:
				b.lines = append(b.lines, Line{Export: export, Name: e.name, Kind: sortName(e.sort), Text: sortName(e.sort)})
			}
		}
	}
}

func sortName(s byte) string {
	switch s {
	case sortComponent:
		return "component"
	case sortValue:
		return "value"
	case sortCore:
		return "core module"
	}
	return "item"
}

// instanceItem converts an imported or exported interface.
func (b *builder) instanceItem(e extern, export bool) {
	owner := e.inst.owner
	if owner == nil { // an instance of inline exports: it owns nothing itself
		owner = &scope{iface: e.name}
	}
	i := b.iface(owner, e.name, export)
	it := &wit.WorldItem{Kind: wit.ItemInterface, Interface: i}
	if i.Name == "" {
		it.Name = e.name
	} else {
		it.Path = &wit.UsePath{Package: &i.Package.Name, Name: i.Name}
	}
	if export {
		b.world.Exports = append(b.world.Exports, it)
	} else {
		b.world.Imports = append(b.world.Imports, it)
	}
	fresh := len(i.Types) == 0 && len(i.Funcs) == 0
	c := &ctx{b: b, owner: owner, iface: i, id: e.name, defs: &i.Types, funcs: &i.Funcs}
	if !fresh { // already declared by the other direction: only its lines
		var defs []*wit.TypeDef
		var funcs []*wit.Func
		c.defs, c.funcs = &defs, &funcs
	}
	for _, m := range e.inst.exports {
		c.member(m, export)
	}
}

// member converts one export of an interface (or one world item): a type or a function.
func (c *ctx) member(e extern, export bool) {
	line := Line{Export: export, Interface: c.id, Name: e.name}
	switch e.sort {
	case sortType:
		d := c.typeDef(e)
		*c.defs = append(*c.defs, d)
		line.Kind, line.Text = "type", defLine(d)
		if d.Kind == wit.DefResource {
			line.Kind = "resource"
			if c.resources == nil {
				c.resources = map[string]*wit.TypeDef{}
			}
			c.resources[d.Name] = d
		}
	case sortFunc:
		f, full := c.fn(e)
		if f.Kind == wit.Freestanding || f.Resource == nil {
			*c.funcs = append(*c.funcs, f)
		}
		line.Kind, line.Text = "func", full
	case sortInstance:
		line.Kind, line.Text = "instance", "instance"
	default:
		line.Kind = sortName(e.sort)
		line.Text = line.Kind
	}
	c.b.lines = append(c.b.lines, line)
}

// typeDef converts a named type of the interface.
func (c *ctx) typeDef(e extern) *wit.TypeDef {
	d := &wit.TypeDef{Name: e.name, Interface: c.iface}
	if c.iface == nil {
		d.World = c.b.world
	}
	tgt := e.t.target
	if tgt != nil {
		tgt = unwrap(tgt)
	}
	if tgt == nil {
		tgt = &typ{kind: kResource}
	}
	switch tgt.kind {
	case kNamed:
		if from := c.b.ifaces[tgt.owner]; from != nil && tgt.owner != c.owner && from.Name != "" {
			d.Kind, d.From, d.FromName, d.FromInterface = wit.DefUse, wit.UsePath{Package: &from.Package.Name, Name: from.Name}, tgt.name, from
			return d
		}
		if from := c.b.ifaceFor(tgt.owner); from != nil && tgt.owner != c.owner && from.Name != "" {
			d.Kind, d.From, d.FromName, d.FromInterface = wit.DefUse, wit.UsePath{Package: &from.Package.Name, Name: from.Name}, tgt.name, from
			return d
		}
		d.Kind, d.Alias = wit.DefAlias, &wit.Type{Kind: wit.Named, Name: tgt.name}
	case kResource:
		d.Kind, d.HasBody = wit.DefResource, false
	case kRecord:
		d.Kind = wit.DefRecord
		for _, f := range tgt.fields {
			d.Fields = append(d.Fields, wit.Field{Name: f.name, Type: c.ref(f.t)})
		}
	case kVariant:
		d.Kind = wit.DefVariant
		for _, f := range tgt.fields {
			cs := wit.Case{Name: f.name}
			if f.t != nil {
				cs.Type = c.ref(f.t)
			}
			d.Cases = append(d.Cases, cs)
		}
	case kEnum, kFlags:
		d.Kind = wit.DefEnum
		if tgt.kind == kFlags {
			d.Kind = wit.DefFlags
		}
		for _, n := range tgt.names {
			d.Names = append(d.Names, wit.Name{Name: n})
		}
	default:
		d.Kind, d.Alias = wit.DefAlias, c.ref(tgt)
	}
	return d
}

// ifaceFor returns the interface a scope was imported or exported as, converting nothing: a
// type can be used from an interface the world lists later.
func (b *builder) ifaceFor(s *scope) *wit.Interface {
	if s == nil || s.iface == "" {
		return nil
	}
	if _, _, ok := splitInterface(s.iface); !ok {
		return nil
	}
	return b.iface(s, s.iface, false)
}

// fn converts a function; full is its signature with every parameter (`self` included), as a
// line shows it.
func (c *ctx) fn(e extern) (*wit.Func, string) {
	ft := e.t
	f := &wit.Func{Name: e.name, Async: ft.async}
	var params []wit.Param
	for _, p := range ft.fields {
		params = append(params, wit.Param{Name: p.name, Type: c.ref(p.t)})
	}
	var result *wit.Type
	if ft.result != nil {
		result = c.ref(ft.result)
	}
	f.Params, f.Result = params, result
	full := "func" + signature(params, result)
	if ft.async {
		full = "async " + full
	}
	kind, res, name := splitFuncName(e.name)
	if kind == wit.Freestanding {
		return f, full
	}
	def := c.resources[res]
	if def == nil {
		return f, full
	}
	f.Kind, f.Name, f.Resource = kind, name, def
	def.HasBody = true
	switch kind {
	case wit.Constructor:
		if result != nil && result.Kind == wit.Named && result.Name == res {
			f.Result = nil
		}
		def.Constructor = f
	case wit.Method:
		if len(f.Params) > 0 {
			f.Params = f.Params[1:]
		}
		def.Methods = append(def.Methods, f)
	case wit.Static:
		def.Statics = append(def.Statics, f)
	}
	return f, full
}

// splitFuncName reads the component model's annotated names: "[method]r.m" and so on.
func splitFuncName(n string) (wit.FuncKind, string, string) {
	switch {
	case strings.HasPrefix(n, "[constructor]"):
		return wit.Constructor, n[len("[constructor]"):], ""
	case strings.HasPrefix(n, "[method]"):
		if r, m, ok := strings.Cut(n[len("[method]"):], "."); ok {
			return wit.Method, r, m
		}
	case strings.HasPrefix(n, "[static]"):
		if r, m, ok := strings.Cut(n[len("[static]"):], "."); ok {
			return wit.Static, r, m
		}
	}
	return wit.Freestanding, "", n
}

func signature(params []wit.Param, result *wit.Type) string {
	ps := make([]string, len(params))
	for i, p := range params {
		ps[i] = ident(p.Name) + ": " + p.Type.String()
	}
	s := "(" + strings.Join(ps, ", ") + ")"
	if result != nil {
		s += " -> " + result.String()
	}
	return s
}

// unwrap follows the type imports of nested components to the types supplied for them.
func unwrap(t *typ) *typ {
	for i := 0; t.kind == kNamed && t.transparent; i++ {
		if i > maxNesting {
			fail("type imports bound to each other more than %d deep", maxNesting)
		}
		switch {
		case t.bound != nil:
			t = t.bound
		case t.target != nil:
			t = t.target
		default:
			return t
		}
	}
	return t
}

// ref converts a type at a use site: a named type by its name, anything else spelled out.
func (c *ctx) ref(t *typ) *wit.Type { return c.refAt(t, 0) }

func (c *ctx) refAt(t *typ, depth int) *wit.Type {
	if depth > maxNesting {
		fail("a type nests more than %d deep", maxNesting)
	}
	if c.b.rendered++; c.b.rendered > maxRendered {
		fail("the component's types written out have more than %d parts", maxRendered)
	}
	depth++
	t = unwrap(t)
	switch t.kind {
	case kNamed:
		return &wit.Type{Kind: wit.Named, Name: t.name}
	case kPrim:
		return &wit.Type{Kind: primKinds[t.prim]}
	case kList:
		return &wit.Type{Kind: wit.List, Elem: c.refAt(t.elem, depth), Len: t.length}
	case kOption:
		return &wit.Type{Kind: wit.Option, Elem: c.refAt(t.elem, depth)}
	case kResult:
		r := &wit.Type{Kind: wit.Result}
		if t.elem != nil {
			r.Ok = c.refAt(t.elem, depth)
		}
		if t.elem2 != nil {
			r.Err = c.refAt(t.elem2, depth)
		}
		return r
	case kTuple:
		r := &wit.Type{Kind: wit.Tuple}
		for _, e := range t.elems {
			r.Elems = append(r.Elems, c.refAt(e, depth))
		}
		return r
	case kMap:
		return &wit.Type{Kind: wit.Map, Key: c.refAt(t.elem, depth), Elem: c.refAt(t.elem2, depth)}
	case kStream, kFuture:
		r := &wit.Type{Kind: wit.Stream}
		if t.kind == kFuture {
			r.Kind = wit.Future
		}
		if t.elem != nil {
			r.Elem = c.refAt(t.elem, depth)
		}
		return r
	case kOwn, kBorrow:
		name := c.refAt(t.elem, depth).Name
		if t.kind == kBorrow {
			return &wit.Type{Kind: wit.Borrow, Name: name}
		}
		return &wit.Type{Kind: wit.Named, Name: name}
	case kResource:
		if t.name != "" {
			return &wit.Type{Kind: wit.Named, Name: t.name}
		}
		return &wit.Type{Kind: wit.Named, Name: "resource"}
	}
	// an anonymous record, variant, enum or flags: WIT cannot write it inline, so it is
	// spelled out as the structural renderer does
	return &wit.Type{Kind: wit.Named, Name: c.inline(t, depth)}
}

func (c *ctx) inline(t *typ, depth int) string {
	var parts []string
	word := ""
	switch t.kind {
	case kRecord:
		word = "record"
		for _, f := range t.fields {
			parts = append(parts, f.name+": "+c.refAt(f.t, depth).String())
		}
	case kVariant:
		word = "variant"
		for _, f := range t.fields {
			if f.t != nil {
				parts = append(parts, f.name+"("+c.refAt(f.t, depth).String()+")")
			} else {
				parts = append(parts, f.name)
			}
		}
	case kEnum, kFlags:
		word = "enum"
		if t.kind == kFlags {
			word = "flags"
		}
		parts = t.names
	default:
		return "unknown-type"
	}
	return word + " { " + strings.Join(parts, ", ") + " }"
}

var primKinds = map[string]wit.Kind{
	"bool": wit.Bool, "s8": wit.S8, "u8": wit.U8, "s16": wit.S16, "u16": wit.U16, "s32": wit.S32,
	"u32": wit.U32, "s64": wit.S64, "u64": wit.U64, "f32": wit.F32, "f64": wit.F64,
	"char": wit.Char, "string": wit.String, "error-context": wit.ErrorContext,
}

// defLine renders a named type on one line: `type record point { x: s32, y: s32 }`,
// `type bytes = list<u8>`, `use wasi:io/poll@0.2.0.{pollable}`, `resource`.
func defLine(d *wit.TypeDef) string {
	switch d.Kind {
	case wit.DefResource:
		return "resource"
	case wit.DefUse:
		from := d.FromInterface.ID()
		if d.FromName == d.Name {
			return "use " + from + ".{" + ident(d.Name) + "}"
		}
		return "use " + from + ".{" + ident(d.FromName) + " as " + ident(d.Name) + "}"
	case wit.DefAlias:
		return "type " + ident(d.Name) + " = " + d.Alias.String()
	}
	var parts []string
	for _, f := range d.Fields {
		parts = append(parts, ident(f.Name)+": "+f.Type.String())
	}
	for _, cs := range d.Cases {
		if cs.Type != nil {
			parts = append(parts, ident(cs.Name)+"("+cs.Type.String()+")")
		} else {
			parts = append(parts, ident(cs.Name))
		}
	}
	for _, n := range d.Names {
		parts = append(parts, ident(n.Name))
	}
	return "type " + d.Kind.String() + " " + ident(d.Name) + " { " + strings.Join(parts, ", ") + " }"
}

// ident escapes a name that is a WIT keyword with '%', as the printer does: it reads it back
// through a one-field type.
func ident(name string) string {
	s := (&wit.Type{Kind: wit.Named, Name: name}).String()
	if s == "" {
		return strconv.Quote(name)
	}
	return s
}
