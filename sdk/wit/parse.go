package wit

import (
	"fmt"
	"strconv"
	"strings"
)

// fileScope is what one file (or one nested package block) sees: its package and the names
// its top-level `use` items bring in.
type fileScope struct {
	pkg  *Package
	uses map[string]UsePath
	pos  map[string]Pos
}

// parsedPackage is the content of one file's package, or of one nested `package x { }` block.
type parsedPackage struct {
	name    *PackageName // nil when the file has no package declaration
	namePos Pos
	docs    string
	scope   *fileScope
	ifaces  []*Interface
	worlds  []*World
}

// parsedFile is one parsed WIT file: its own package's items and its nested packages.
type parsedFile struct {
	name   string
	top    *parsedPackage
	nested []*parsedPackage
}

// bailout carries a syntax error out of the recursive descent.
type bailout struct{ err *Error }

// parser is a recursive-descent parser of one file.
type parser struct {
	lx    *lexer
	tok   token
	depth int // nesting of types being read
}

// maxDepth bounds how deeply types nest (list<list<...>>), so that hostile input cannot
// exhaust the stack.
const maxDepth = 100

// parseFile parses one WIT file. The error, if any, is an *Error.
func parseFile(name string, src []byte) (f *parsedFile, err error) {
	p := &parser{lx: newLexer(name, src)}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			f, err = nil, b.err
		}
	}()
	p.next()
	return p.file(), nil
}

func (p *parser) fail(e *Error) { panic(bailout{e}) }

func (p *parser) failf(format string, args ...any) { p.fail(errorf(p.tok.pos, format, args...)) }

func (p *parser) next() {
	t, err := p.lx.next()
	if err != nil {
		p.fail(err)
	}
	p.tok = t
}

// state is a point to return to after looking ahead.
type state struct {
	off int
	tok token
}

func (p *parser) save() state     { return state{p.lx.off, p.tok} }
func (p *parser) restore(s state) { p.lx.off, p.tok = s.off, s.tok }

// is reports whether the current token is the operator or keyword text.
func (p *parser) is(text string) bool {
	return (p.tok.kind == tPunct || p.tok.kind == tKeyword) && p.tok.text == text
}

// eat consumes the operator or keyword text if it is next.
func (p *parser) eat(text string) bool {
	if p.is(text) {
		p.next()
		return true
	}
	return false
}

// expect consumes the operator or keyword text or fails saying what it was for.
func (p *parser) expect(text, context string) token {
	t := p.tok
	if !p.is(text) {
		if context != "" {
			context = " " + context
		}
		p.failf("expected '%s'%s, found %s", text, context, p.tok.describe())
	}
	p.next()
	return t
}

// ident consumes an identifier; what names it for the error message.
func (p *parser) ident(what string) token {
	t := p.tok
	if t.kind != tIdent {
		if t.kind == tKeyword {
			p.failf("expected %s, found keyword '%s' (write %%%s to use it as a name)", what, t.text, t.text)
		}
		p.failf("expected %s, found %s", what, t.describe())
	}
	p.next()
	return t
}

// version reads the semantic version after the current '@' or '=' token.
func (p *parser) version() string {
	p.lx.off = p.tok.end
	v, _, err := p.lx.version()
	if err != nil {
		p.fail(err)
	}
	p.next()
	return v
}

func (p *parser) file() *parsedFile {
	f := &parsedFile{name: p.lx.file, top: &parsedPackage{scope: newScope()}}
	if p.is("package") || p.is("@") && p.packageAhead() {
		docs, pos := p.tok.docs, p.tok.pos
		p.gates() // gates on a package are allowed and ignored by the model
		p.expect("package", "")
		name := p.packageName()
		if p.eat(";") {
			f.top.name, f.top.namePos, f.top.docs = &name, pos, docs
		} else {
			f.nested = append(f.nested, p.nestedPackage(name, pos, docs))
		}
	}
	for p.tok.kind != tEOF {
		if p.is("package") {
			docs, pos := p.tok.docs, p.tok.pos
			p.next()
			name := p.packageName()
			if p.is(";") {
				p.fail(errorf(pos, "package declaration must come first in the file"))
			}
			f.nested = append(f.nested, p.nestedPackage(name, pos, docs))
			continue
		}
		p.packageItem(f.top)
	}
	return f
}

// packageAhead reports whether the gates at the current token are followed by `package`.
func (p *parser) packageAhead() bool {
	s := p.save()
	defer p.restore(s)
	p.gates()
	return p.is("package")
}

func newScope() *fileScope {
	return &fileScope{uses: map[string]UsePath{}, pos: map[string]Pos{}}
}

func (p *parser) nestedPackage(name PackageName, pos Pos, docs string) *parsedPackage {
	pp := &parsedPackage{name: &name, namePos: pos, docs: docs, scope: newScope()}
	p.expect("{", "or ';' after the package name")
	for !p.eat("}") {
		if p.tok.kind == tEOF {
			p.failf("expected '}' to close package %s, found end of file", name)
		}
		if p.is("package") {
			p.failf("packages cannot nest inside package %s", name)
		}
		p.packageItem(pp)
	}
	return pp
}

// packageName reads `ns:name@version`.
func (p *parser) packageName() PackageName {
	ns := p.ident("a package namespace")
	p.expect(":", "between the package namespace and name")
	name := p.ident("a package name")
	if p.is(":") {
		p.failf("nested namespaces (a:b:c) are not supported")
	}
	if p.is("/") {
		p.failf("nested packages (a:b/c) are not supported in a package declaration")
	}
	n := PackageName{Namespace: ns.text, Name: name.text}
	if p.is("@") {
		n.Version = p.version()
	}
	return n
}

// packageItem reads one `interface`, `world` or top-level `use`.
func (p *parser) packageItem(pp *parsedPackage) {
	docs, pos := p.tok.docs, p.tok.pos
	gates := p.gates()
	switch {
	case p.is("interface"):
		p.next()
		name := p.ident("an interface name")
		i := &Interface{Name: name.text, Docs: docs, Gates: gates, Pos: name.pos, scope: pp.scope}
		p.interfaceBody(i)
		pp.ifaces = append(pp.ifaces, i)
	case p.is("world"):
		p.next()
		name := p.ident("a world name")
		w := &World{Name: name.text, Docs: docs, Gates: gates, Pos: name.pos, scope: pp.scope}
		p.worldBody(w)
		pp.worlds = append(pp.worlds, w)
	case p.is("use"):
		if gates != (Gates{}) {
			p.fail(errorf(pos, "a top-level 'use' cannot be gated (gate the items that use it)"))
		}
		p.next()
		path := p.usePath()
		as := path.Name
		asPos := path.Pos
		if p.eat("as") {
			t := p.ident("a name after 'as'")
			as, asPos = t.text, t.pos
		}
		p.expect(";", "after the top-level use")
		if prev, ok := pp.scope.pos[as]; ok {
			p.fail(errorf(asPos, "name '%s' is already used by the top-level use at %s", as, prev))
		}
		pp.scope.uses[as], pp.scope.pos[as] = path, asPos
	default:
		p.failf("expected 'interface', 'world', 'use' or 'package', found %s", p.tok.describe())
	}
}

// gates reads any number of `@since(...)`, `@unstable(...)`, `@deprecated(...)`.
func (p *parser) gates() Gates {
	var g Gates
	for p.is("@") {
		p.next()
		kind := p.ident("'since', 'unstable' or 'deprecated' after '@'")
		p.expect("(", "after @"+kind.text)
		switch kind.text {
		case "since", "deprecated":
			p.gateKey("version", kind.text)
			v := p.version()
			if kind.text == "since" {
				g.Since = v
			} else {
				g.Deprecated = v
			}
		case "unstable":
			p.gateKey("feature", kind.text)
			g.Unstable = p.ident("a feature name").text
		default:
			p.fail(errorf(kind.pos, "unknown annotation '@%s': expected 'since', 'unstable' or 'deprecated'", kind.text))
		}
		p.expect(")", "to close @"+kind.text+"(...)")
	}
	if g.Since != "" && g.Unstable != "" {
		p.failf("an item cannot be both @since and @unstable")
	}
	return g
}

// gateKey reads `key =` inside a gate; it leaves the '=' current for version().
func (p *parser) gateKey(key, gate string) {
	t := p.ident("'" + key + "' in @" + gate)
	if t.text != key {
		p.fail(errorf(t.pos, "expected '%s' in @%s, found identifier '%s'", key, gate, t.text))
	}
	if !p.is("=") {
		p.failf("expected '=' after '%s', found %s", key, p.tok.describe())
	}
	if key == "feature" {
		p.next()
	}
}

// usePath reads `name` or `ns:pkg/name@version`.
func (p *parser) usePath() UsePath {
	first := p.ident("an interface or world name")
	if !p.is(":") {
		return UsePath{Name: first.text, Pos: first.pos}
	}
	p.next()
	pkg := p.ident("a package name after ':'")
	if p.is(":") {
		p.failf("nested namespaces (a:b:c) are not supported")
	}
	p.expect("/", "and an interface or world name after the package name")
	name := p.ident("an interface or world name after '/'")
	if p.is("/") {
		p.failf("nested packages (a:b/c/d) are not supported")
	}
	pn := &PackageName{Namespace: first.text, Name: pkg.text}
	if p.is("@") {
		pn.Version = p.version()
	}
	return UsePath{Package: pn, Name: name.text, Pos: first.pos}
}

func (p *parser) interfaceBody(i *Interface) {
	p.expect("{", "to open interface "+i.Name)
	for !p.eat("}") {
		if p.tok.kind == tEOF {
			p.failf("expected '}' to close interface %s, found end of file", displayName(i.Name, i.inline))
		}
		docs := p.tok.docs
		gates := p.gates()
		switch {
		case p.is("use"):
			for _, d := range p.useItem(docs, gates) {
				d.Interface = i
				i.Types = append(i.Types, d)
			}
		case p.tok.kind == tKeyword:
			if d := p.typeDef(docs, gates); d != nil {
				d.Interface = i
				i.Types = append(i.Types, d)
			} else {
				p.failf("expected a type definition, 'use' or a function, found %s%s", p.tok.describe(), p.keywordHint())
			}
		default:
			name := p.ident("a type definition, 'use' or a function name")
			p.expect(":", "after function name "+name.text)
			f := p.funcType(Freestanding, name, docs, gates)
			p.expect(";", "after function "+name.text)
			i.Funcs = append(i.Funcs, f)
		}
	}
}

func displayName(name, inline string) string {
	if name == "" {
		return inline
	}
	return name
}

// keywordHint suggests escaping the current keyword when a ':' follows it, as after a name.
func (p *parser) keywordHint() string {
	s := p.save()
	defer p.restore(s)
	kw := p.tok.text
	p.next()
	if p.is(":") {
		return fmt.Sprintf(" (write %%%s to use it as a name)", kw)
	}
	return ""
}

// useItem reads `use path.{a, b as c};` into one DefUse per name.
func (p *parser) useItem(docs string, gates Gates) []*TypeDef {
	p.expect("use", "")
	path := p.usePath()
	p.expect(".", "and '{' after the path of a use")
	p.expect("{", "to list the names of a use")
	var defs []*TypeDef
	for {
		name := p.ident("a name to use")
		d := &TypeDef{Kind: DefUse, Name: name.text, Pos: name.pos, Docs: docs, Gates: gates, From: path, FromName: name.text}
		if p.eat("as") {
			as := p.ident("a name after 'as'")
			d.Name, d.Pos = as.text, as.pos
		}
		defs = append(defs, d)
		if !p.eat(",") {
			break
		}
		if p.is("}") {
			break
		}
	}
	p.expect("}", "to close the names of a use")
	p.expect(";", "after a use")
	return defs
}

// typeDef reads a record, variant, enum, flags, resource or type alias at a keyword; it
// returns nil when the keyword starts none of them.
func (p *parser) typeDef(docs string, gates Gates) *TypeDef {
	var kind DefKind
	switch {
	case p.is("record"):
		kind = DefRecord
	case p.is("variant"):
		kind = DefVariant
	case p.is("enum"):
		kind = DefEnum
	case p.is("flags"):
		kind = DefFlags
	case p.is("resource"):
		kind = DefResource
	case p.is("type"):
		kind = DefAlias
	default:
		return nil
	}
	kw := p.tok.text
	p.next()
	name := p.ident("a name after '" + kw + "'")
	d := &TypeDef{Kind: kind, Name: name.text, Docs: docs, Gates: gates, Pos: name.pos}
	switch kind {
	case DefAlias:
		p.expect("=", "after type "+name.text)
		d.Alias = p.typ()
		p.expect(";", "after type "+name.text)
	case DefResource:
		if p.eat(";") {
			return d
		}
		d.HasBody = true
		p.expect("{", "or ';' after resource "+name.text)
		for !p.eat("}") {
			p.resourceFunc(d)
		}
	default:
		p.expect("{", "to open "+kw+" "+name.text)
		for !p.is("}") {
			p.member(d, kw)
			if !p.eat(",") {
				break
			}
		}
		p.expect("}", "to close "+kw+" "+name.text)
		if len(d.Fields)+len(d.Cases)+len(d.Names) == 0 {
			p.fail(errorf(name.pos, "%s %s must have at least one %s", kw, name.text, memberWord(kind)))
		}
	}
	return d
}

func memberWord(k DefKind) string {
	switch k {
	case DefRecord:
		return "field"
	case DefFlags:
		return "flag"
	}
	return "case"
}

// member reads one field, case or flag of d.
func (p *parser) member(d *TypeDef, kw string) {
	docs := p.tok.docs
	name := p.ident("a " + memberWord(d.Kind) + " name in " + kw + " " + d.Name)
	switch d.Kind {
	case DefRecord:
		p.expect(":", "after field "+name.text)
		d.Fields = append(d.Fields, Field{Name: name.text, Type: p.typ(), Docs: docs, Pos: name.pos})
	case DefVariant:
		c := Case{Name: name.text, Docs: docs, Pos: name.pos}
		if p.eat("(") {
			c.Type = p.typ()
			p.expect(")", "to close the payload of case "+name.text)
		}
		d.Cases = append(d.Cases, c)
	default:
		d.Names = append(d.Names, Name{Name: name.text, Docs: docs, Pos: name.pos})
	}
}

// resourceFunc reads one constructor, method or static function of resource r.
func (p *parser) resourceFunc(r *TypeDef) {
	if p.tok.kind == tEOF {
		p.failf("expected '}' to close resource %s, found end of file", r.Name)
	}
	docs := p.tok.docs
	gates := p.gates()
	if p.is("constructor") {
		t := p.tok
		f := p.funcType(Constructor, t, docs, gates)
		f.Resource = r
		p.expect(";", "after the constructor of "+r.Name)
		if r.Constructor != nil {
			p.fail(errorf(t.pos, "resource %s has two constructors (the first at %s)", r.Name, r.Constructor.Pos))
		}
		r.Constructor = f
		return
	}
	name := p.ident("'constructor' or a method name in resource " + r.Name)
	p.expect(":", "after method name "+name.text)
	kind := Method
	if p.eat("static") {
		kind = Static
	}
	f := p.funcType(kind, name, docs, gates)
	f.Resource = r
	p.expect(";", "after method "+name.text)
	if kind == Static {
		r.Statics = append(r.Statics, f)
	} else {
		r.Methods = append(r.Methods, f)
	}
}

// funcType reads `async? func(params) -> result` (a constructor: `constructor(params)`).
func (p *parser) funcType(kind FuncKind, name token, docs string, gates Gates) *Func {
	f := &Func{Kind: kind, Docs: docs, Gates: gates, Pos: name.pos}
	if kind == Constructor {
		p.next()
	} else {
		f.Name = name.text
		f.Async = p.eat("async")
		p.expect("func", "after '"+name.text+":'")
	}
	p.expect("(", "to open the parameters")
	for !p.is(")") {
		pn := p.ident("a parameter name or ')'")
		p.expect(":", "after parameter "+pn.text)
		f.Params = append(f.Params, Param{Name: pn.text, Type: p.typ(), Pos: pn.pos})
		if !p.eat(",") {
			break
		}
	}
	p.expect(")", "to close the parameters")
	if p.eat("->") {
		if p.is("(") {
			p.failf("expected a type after '->', found '(' (functions have at most one result: use a tuple or a record)")
		}
		f.Result = p.typ()
	}
	return f
}

// primitives maps type keywords to kinds.
var primitives = map[string]Kind{
	"bool": Bool, "s8": S8, "s16": S16, "s32": S32, "s64": S64, "u8": U8, "u16": U16, "u32": U32,
	"u64": U64, "f32": F32, "f64": F64, "char": Char, "string": String,
	"error-context": ErrorContext,
}

// typ reads a type.
func (p *parser) typ() *Type {
	t := &Type{Pos: p.tok.pos}
	if p.depth++; p.depth > maxDepth {
		p.failf("types nest more than %d deep", maxDepth)
	}
	defer func() { p.depth-- }()
	if p.tok.kind == tIdent && !p.tok.escaped && (p.tok.text == "float32" || p.tok.text == "float64") {
		// the older spellings of f32 and f64: names elsewhere, types here
		t.Kind = F32
		if p.tok.text == "float64" {
			t.Kind = F64
		}
		p.next()
		return t
	}
	if p.tok.kind == tIdent {
		t.Kind, t.Name = Named, p.tok.text
		p.next()
		return t
	}
	if p.tok.kind != tKeyword {
		p.failf("expected a type, found %s", p.tok.describe())
	}
	kw := p.tok.text
	if k, ok := primitives[kw]; ok {
		t.Kind = k
		p.next()
		return t
	}
	p.next()
	closing := "to close " + kw + "<...>"
	switch kw {
	case "list":
		t.Kind = List
		p.expect("<", "after 'list'")
		t.Elem = p.typ()
		if p.eat(",") {
			n := p.tok
			if n.kind != tInt {
				p.failf("expected the length of a fixed-size list (list<T, N>) after ',', found %s", n.describe())
			}
			v, err := strconv.ParseUint(n.text, 10, 32)
			if err != nil || v == 0 {
				p.failf("invalid list length %s: want an integer from 1 to %d", n.text, uint32(1<<32-1))
			}
			t.Len = uint32(v)
			p.next()
		}
		p.expect(">", closing)
	case "option":
		t.Kind = Option
		p.expect("<", "after 'option'")
		t.Elem = p.typ()
		p.expect(">", closing)
	case "result":
		t.Kind = Result
		if !p.eat("<") {
			return t
		}
		if p.eat("_") {
			p.expect(",", "after '_' in result<_, E>")
			t.Err = p.typ()
		} else {
			t.Ok = p.typ()
			if p.eat(",") {
				t.Err = p.typ()
			}
		}
		p.expect(">", closing)
	case "tuple":
		t.Kind = Tuple
		p.expect("<", "after 'tuple'")
		for {
			t.Elems = append(t.Elems, p.typ())
			if !p.eat(",") || p.is(">") {
				break
			}
		}
		p.expect(">", closing)
	case "map":
		t.Kind = Map
		p.expect("<", "after 'map'")
		t.Key = p.typ()
		p.expect(",", "between the key and value types of map<K, V>")
		t.Elem = p.typ()
		p.expect(">", closing)
	case "future", "stream":
		t.Kind = Future
		if kw == "stream" {
			t.Kind = Stream
		}
		if p.eat("<") {
			t.Elem = p.typ()
			p.expect(">", closing)
		}
	case "borrow", "own":
		t.Kind = Borrow
		if kw == "own" {
			t.Kind = Own
		}
		p.expect("<", "after '"+kw+"'")
		t.Name = p.ident("a resource name in " + kw + "<...>").text
		p.expect(">", closing)
	default:
		p.fail(errorf(t.Pos, "expected a type, found keyword '%s'", kw))
	}
	return t
}

func (p *parser) worldBody(w *World) {
	p.expect("{", "to open world "+w.Name)
	for !p.eat("}") {
		if p.tok.kind == tEOF {
			p.failf("expected '}' to close world %s, found end of file", w.Name)
		}
		docs, pos := p.tok.docs, p.tok.pos
		gates := p.gates()
		switch {
		case p.is("use"):
			for _, d := range p.useItem(docs, gates) {
				d.World = w
				w.Types = append(w.Types, d)
			}
		case p.is("import"), p.is("export"):
			exp := p.is("export")
			p.next()
			it := p.worldItem(w, docs, gates)
			if exp {
				w.Exports = append(w.Exports, it)
			} else {
				w.Imports = append(w.Imports, it)
			}
		case p.is("include"):
			p.next()
			inc := &Include{Path: p.usePath(), Docs: docs, Gates: gates, Pos: pos}
			if p.eat("with") {
				p.expect("{", "after 'with'")
				for !p.is("}") {
					from := p.ident("a name to rename")
					p.expect("as", "after "+from.text+" in include ... with { a as b }")
					to := p.ident("a new name after 'as'")
					inc.With = append(inc.With, [2]string{from.text, to.text})
					if !p.eat(",") {
						break
					}
				}
				p.expect("}", "to close include ... with { ... }")
			}
			p.expect(";", "after include")
			w.Includes = append(w.Includes, inc)
		default:
			d := p.typeDef(docs, gates)
			if d == nil {
				p.failf("expected 'import', 'export', 'include', 'use' or a type definition, found %s", p.tok.describe())
			}
			d.World = w
			w.Types = append(w.Types, d)
		}
	}
}

// worldItem reads what follows `import` or `export`.
func (p *parser) worldItem(w *World, docs string, gates Gates) *WorldItem {
	it := &WorldItem{Docs: docs, Gates: gates, Pos: p.tok.pos}
	start := p.save()
	if p.tok.kind == tIdent {
		name := p.tok
		p.next()
		if p.eat(":") {
			qualified := false
			if p.tok.kind == tIdent {
				s := p.save()
				p.next()
				qualified = p.is("/")
				p.restore(s)
			}
			if !qualified {
				it.Name = name.text
				switch {
				case p.is("func"), p.is("async"):
					it.Kind = ItemFunc
					it.Func = p.funcType(Freestanding, name, docs, gates)
					p.expect(";", "after function "+name.text)
				case p.is("interface"):
					p.next()
					it.Kind = ItemInterface
					it.Interface = &Interface{World: w, Docs: docs, Gates: gates, Pos: name.pos, scope: w.scope, inline: name.text}
					p.interfaceBody(it.Interface)
				default:
					path := p.usePath()
					it.Kind, it.Path = ItemInterface, &path
					p.expect(";", "after the interface of "+name.text)
				}
				return it
			}
		}
	}
	p.restore(start)
	path := p.usePath()
	it.Kind, it.Path = ItemInterface, &path
	p.expect(";", "after the interface name "+strings.TrimSpace(path.String()))
	return it
}
