package witdecode

// This file reads the component binary into scopes: index spaces of types, functions,
// instances and components, with their imports and exports. Only what naming needs is kept;
// core modules, core instances, core types and canonical options are skipped over.

// Limits on what a file may make the decoder build; each is far above what a real component
// has, and keeps a hostile file from making it work or allocate without bound.
const (
	maxDepth     = 32      // nesting of components, component types and instance types
	maxItems     = 1 << 18 // entries in all index spaces together
	maxNesting   = 1000    // depth of a type written out (list<list<...>>), aliases followed
	maxRendered  = 1 << 22 // parts of all types written out, for the whole file
	maxTypeNodes = 1 << 16 // size of one type spelled out (nested lists, tuples, records...)
)

type tkind uint8

const (
	kPrim tkind = iota
	kRecord
	kVariant
	kList
	kTuple
	kFlags
	kEnum
	kOption
	kResult
	kOwn
	kBorrow
	kStream
	kFuture
	kMap
	kFunc
	kResource
	kInstance
	kComponent
	kNamed
	kCore // a core type, or what an unsupported definition left in the index space
)

// field is a record field, a variant case (t nil without payload) or a function parameter.
type field struct {
	name string
	t    *typ
}

// typ is one entry of a type index space. Indices are resolved to pointers as they are read,
// so a type aliased or exported elsewhere is the same *typ, and names follow by identity.
type typ struct {
	kind   tkind
	prim   string  // kPrim: "u32", "string", ...
	fields []field // kRecord, kVariant, kFunc (params)
	names  []string
	elems  []*typ // kTuple
	elem   *typ   // kList, kOption, kOwn, kBorrow, kStream, kFuture; kResult ok; kMap key
	elem2  *typ   // kResult err; kMap value
	length uint32 // fixed-length list
	result *typ   // kFunc
	async  bool   // kFunc
	sc     *scope // kInstance, kComponent

	// kNamed: a type imported or exported under name by owner; target is what it equals
	// (a fresh kResource for `sub resource`). kResource: the name the component-name section
	// gives a resource the component defines.
	name   string
	target *typ
	owner  *scope
	// transparent is set on the type imports of a nested component: wit-component names them
	// import-type-*, and bound is the type the instantiation supplied.
	transparent bool
	bound       *typ

	nodes int // size spelled out, bounded by maxTypeNodes
}

// extern is an import or export: of a function (t is its type), a type (t is the kNamed
// entry), an instance or a component.
type extern struct {
	name string
	sort byte // sortFunc, sortType, sortInstance, sortComponent, sortValue, sortCore
	t    *typ
	inst *instance
}

const (
	sortCore      = 0x00
	sortFunc      = 0x01
	sortValue     = 0x02
	sortType      = 0x03
	sortComponent = 0x04
	sortInstance  = 0x05
)

// instance is an entry of the instance index space: what it exports, and where they are
// declared (the instance type or the instantiated component, whose named types it owns).
type instance struct {
	exports []extern
	owner   *scope
	byName  map[string]extern // made on the first look-up
}

func (in *instance) export(name string) (extern, bool) {
	if in.byName == nil {
		in.byName = make(map[string]extern, len(in.exports))
		for _, e := range in.exports {
			if _, dup := in.byName[e.name]; !dup {
				in.byName[e.name] = e
			}
		}
	}
	e, ok := in.byName[name]
	return e, ok
}

// scope is a component, a component type or an instance type: index spaces and declarations.
type scope struct {
	parent     *scope
	depth      int
	types      []*typ
	funcs      []*typ
	instances  []*instance
	components []*scope
	values     int
	imports    []extern
	exports    []extern
	// nested is set on a component defined inside another one.
	nested bool
	// iface is the name the scope is imported or exported under ("wasi:io/poll@0.2.0").
	iface string
	// typeNames are names from the component-name section, by type index.
	typeNames map[uint32]string
	// typeImports are the type imports by name, made on the first instantiation.
	typeImports map[string][]*typ
	// counter is shared by the whole file and counts entries against maxItems.
	counter *int
}

func (s *scope) child() *scope {
	return &scope{parent: s, depth: s.depth + 1, counter: s.counter}
}

func (s *scope) count(r *reader) {
	*s.counter++
	if *s.counter > maxItems {
		r.failf("more than %d definitions", maxItems)
	}
}

func (s *scope) addType(r *reader, t *typ) {
	s.count(r)
	s.types = append(s.types, t)
}

// at returns list[idx], failing when idx is outside it; what names the index space.
func at[T any](r *reader, list []T, idx uint32, what string) T {
	if int64(idx) >= int64(len(list)) {
		r.failf("%s index %d out of range (%d %ss)", what, idx, len(list), what)
	}
	return list[idx]
}

func (s *scope) typeAt(r *reader, idx uint32) *typ { return at(r, s.types, idx, "type") }

func (s *scope) funcAt(r *reader, idx uint32) *typ { return at(r, s.funcs, idx, "function") }

func (s *scope) instanceAt(r *reader, idx uint32) *instance {
	return at(r, s.instances, idx, "instance")
}

func (s *scope) componentAt(r *reader, idx uint32) *scope {
	return at(r, s.components, idx, "component")
}

// outer returns the scope ct levels out.
func (s *scope) outer(r *reader, ct uint32) *scope {
	o := s
	for i := uint32(0); i < ct; i++ {
		if o.parent == nil {
			r.failf("outer alias reaches %d scopes out, only %d enclose it", ct, i)
		}
		o = o.parent
	}
	return o
}

// preamble checks the 8-byte header of a component.
func preamble(r *reader) {
	if r.remaining() < 8 || string(r.b[r.off:r.off+4]) != "\x00asm" {
		r.failf("not a WebAssembly binary (no \\0asm header)")
	}
	r.off += 4
	version := r.b[r.off : r.off+4]
	r.off += 4
	if version[2] == 0 && version[3] == 0 {
		r.failf("this is a core WebAssembly module, not a component")
	}
	if version[0] != 0x0d || version[1] != 0 || version[2] != 1 || version[3] != 0 {
		r.failf("unsupported component binary version % x (this reader knows 0d 00 01 00)", version)
	}
}

// component reads the sections of a component (after its preamble) into s.
func (s *scope) component(r *reader) {
	if s.depth > maxDepth {
		r.failf("components nested more than %d deep", maxDepth)
	}
	for !r.done() {
		id := r.byte()
		size := r.u32()
		sec := r.sub(size, "section")
		switch id {
		case 0:
			s.custom(sec)
		case 1, 2, 3, 9:
			// core module, core instances, core types, start: nothing WIT names
		case 4:
			c := s.child()
			c.nested = true
			preamble(sec)
			c.component(sec)
			s.count(r)
			s.components = append(s.components, c)
		case 5:
			for n := sec.count("instance"); n > 0; n-- {
				s.instanceDef(sec)
			}
		case 6:
			for n := sec.count("alias"); n > 0; n-- {
				s.alias(sec)
			}
		case 7:
			for n := sec.count("type"); n > 0; n-- {
				s.addType(sec, s.deftype(sec))
			}
		case 8:
			for n := sec.count("canon"); n > 0; n-- {
				s.canon(sec)
			}
		case 10:
			for n := sec.count("import"); n > 0; n-- {
				s.importDecl(sec)
			}
		case 11:
			for n := sec.count("export"); n > 0; n-- {
				s.exportDef(sec)
			}
		case 12:
			sec.failf("value definitions are not supported")
		default:
			r.failf("unknown section id %d", id)
		}
		if id != 0 && id != 1 && id != 2 && id != 3 && id != 9 && !sec.done() {
			sec.failf("%d bytes left over at the end of section %d", sec.remaining(), id)
		}
	}
	// A resource the component defines has no name in its types; the name section may give
	// one (a handle of it is written with that name rather than as `resource`).
	for idx, name := range s.typeNames {
		if int64(idx) < int64(len(s.types)) {
			if t := s.types[idx]; t.kind == kResource && t.name == "" {
				t.name = name
			}
		}
	}
}

// custom reads the component-name section (type names only); other custom sections are skipped.
// The name section is advisory: a malformed one is ignored, as engines do.
func (s *scope) custom(r *reader) {
	if r.name() != "component-name" {
		return
	}
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(decodeError); !ok {
				panic(e)
			}
		}
	}()
	for !r.done() {
		id := r.byte()
		sub := r.sub(r.u32(), "name subsection")
		if id != 1 {
			continue
		}
		sort := sub.byte()
		if sort == sortCore {
			sub.byte()
		}
		for n := sub.count("name"); n > 0; n-- {
			idx := sub.u32()
			name := sub.name()
			if sort == sortType {
				if s.typeNames == nil {
					s.typeNames = map[uint32]string{}
				}
				s.typeNames[idx] = name
			}
		}
	}
}

// sortByte reads a sort; core sorts are returned as sortCore with their core sort consumed.
func sortByte(r *reader) byte {
	b := r.byte()
	switch b {
	case sortCore:
		switch c := r.byte(); c {
		case 0x00, 0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12:
		default:
			r.failf("unknown core sort %#x", c)
		}
	case sortFunc, sortValue, sortType, sortComponent, sortInstance:
	default:
		r.failf("unknown sort %#x", b)
	}
	return b
}

// item returns what a sort index names in s, as an extern without a name.
func (s *scope) item(r *reader, sort byte, idx uint32) extern {
	switch sort {
	case sortFunc:
		return extern{sort: sort, t: s.funcAt(r, idx)}
	case sortType:
		return extern{sort: sort, t: s.typeAt(r, idx)}
	case sortInstance:
		return extern{sort: sort, inst: s.instanceAt(r, idx)}
	case sortComponent:
		c := s.componentAt(r, idx)
		return extern{sort: sort, t: &typ{kind: kComponent, sc: c}}
	}
	return extern{sort: sort}
}

// push adds e to the index space of its sort.
func (s *scope) push(r *reader, e extern) {
	s.count(r)
	switch e.sort {
	case sortFunc:
		s.funcs = append(s.funcs, e.t)
	case sortType:
		s.types = append(s.types, e.t)
	case sortInstance:
		s.instances = append(s.instances, e.inst)
	case sortComponent:
		if e.t != nil && e.t.sc != nil {
			s.components = append(s.components, e.t.sc)
		} else {
			s.components = append(s.components, s.child())
		}
	case sortValue:
		s.values++
	}
}

func (s *scope) instanceDef(r *reader) {
	switch b := r.byte(); b {
	case 0x00:
		c := s.componentAt(r, r.u32())
		for n := r.count("instantiate argument"); n > 0; n-- {
			name := r.name()
			sort := sortByte(r)
			arg := s.item(r, sort, r.u32())
			if sort != sortType {
				continue
			}
			// Bind the component's type import of that name to the type supplied.
			if c.typeImports == nil {
				c.typeImports = map[string][]*typ{}
				for _, im := range c.imports {
					if im.sort == sortType && im.t.transparent {
						c.typeImports[im.name] = append(c.typeImports[im.name], im.t)
					}
				}
			}
			for _, t := range c.typeImports[name] {
				t.bound = arg.t
			}
		}
		s.count(r)
		s.instances = append(s.instances, &instance{exports: c.exports, owner: c})
	case 0x01:
		in := &instance{}
		for n := r.count("export"); n > 0; n-- {
			name := nameAttributes(r)
			sort := sortByte(r)
			e := s.item(r, sort, r.u32())
			e.name = name
			in.exports = append(in.exports, e)
		}
		s.count(r)
		s.instances = append(s.instances, in)
	default:
		r.failf("unknown instance expression %#x", b)
	}
}

func (s *scope) alias(r *reader) {
	sort := sortByte(r)
	switch b := r.byte(); b {
	case 0x00:
		in := s.instanceAt(r, r.u32())
		name := r.name()
		e, ok := in.export(name)
		if !ok {
			r.failf("alias of %q: the instance exports no such name", name)
		}
		if e.sort != sort {
			r.failf("alias of %q: sort %#x, but the export has sort %#x", name, sort, e.sort)
		}
		s.push(r, e)
	case 0x01:
		r.u32()
		r.name()
		if sort != sortCore {
			r.failf("core export alias of a component sort %#x", sort)
		}
	case 0x02:
		o := s.outer(r, r.u32())
		idx := r.u32()
		switch sort {
		case sortType:
			s.push(r, extern{sort: sort, t: o.typeAt(r, idx)})
		case sortComponent:
			s.push(r, extern{sort: sort, t: &typ{kind: kComponent, sc: o.componentAt(r, idx)}})
		case sortCore:
		default:
			r.failf("outer alias of sort %#x", sort)
		}
	default:
		r.failf("unknown alias target %#x", b)
	}
}

// nameAttributes reads an import or export name with its attributes (ignored).
func nameAttributes(r *reader) string {
	switch b := r.byte(); b {
	case 0x00, 0x01:
		return r.name()
	case 0x02:
		name := r.name()
		for n := r.count("attribute"); n > 0; n-- {
			switch a := r.byte(); a {
			case 0x00, 0x01, 0x02:
				r.name()
			default:
				r.failf("unknown name attribute %#x", a)
			}
		}
		return name
	default:
		r.failf("unknown name prefix %#x", b)
	}
	return ""
}

// externType reads an externtype and returns what it declares, with the name set.
func (s *scope) externType(r *reader, name string) extern {
	switch b := r.byte(); b {
	case 0x00:
		if c := r.byte(); c != 0x11 {
			r.failf("core extern type %#x (only modules can be imported)", c)
		}
		r.u32()
		return extern{name: name, sort: sortCore}
	case 0x01:
		t := s.typeAt(r, r.u32())
		if t.kind != kFunc {
			r.failf("function %q has a type that is not a function type", name)
		}
		return extern{name: name, sort: sortFunc, t: t}
	case 0x02:
		switch v := r.byte(); v {
		case 0x00:
			r.u32()
		case 0x01:
			s.valtype(r)
		default:
			r.failf("unknown value bound %#x", v)
		}
		return extern{name: name, sort: sortValue}
	case 0x03:
		n := &typ{kind: kNamed, name: name, owner: s, nodes: 1}
		switch v := r.byte(); v {
		case 0x00:
			n.target = s.typeAt(r, r.u32())
		case 0x01:
			n.target = &typ{kind: kResource, nodes: 1}
		default:
			r.failf("unknown type bound %#x", v)
		}
		return extern{name: name, sort: sortType, t: n}
	case 0x04:
		t := s.typeAt(r, r.u32())
		if t.kind != kComponent {
			r.failf("component %q has a type that is not a component type", name)
		}
		return extern{name: name, sort: sortComponent, t: t}
	case 0x05:
		t := s.typeAt(r, r.u32())
		if t.kind != kInstance {
			r.failf("instance %q has a type that is not an instance type", name)
		}
		return extern{name: name, sort: sortInstance, inst: &instance{exports: t.sc.exports, owner: t.sc}}
	default:
		r.failf("unknown extern type %#x", b)
	}
	return extern{}
}

// declare adds an imported or exported declaration to s's index spaces.
func (s *scope) declare(r *reader, e extern) {
	if e.sort == sortInstance && e.inst.owner != nil && e.inst.owner.iface == "" {
		e.inst.owner.iface = e.name
	}
	s.push(r, e)
}

func (s *scope) importDecl(r *reader) {
	e := s.externType(r, nameAttributes(r))
	if e.sort == sortType && s.nested {
		e.t.transparent = true
	}
	s.imports = append(s.imports, e)
	s.declare(r, e)
}

func (s *scope) exportDef(r *reader) {
	name := nameAttributes(r)
	sort := sortByte(r)
	e := s.item(r, sort, r.u32())
	e.name = name
	if r.byte() == 0x01 { // an ascribed type
		asc := s.externType(r, name)
		if asc.sort != sort {
			r.failf("export %q: ascribed type of another sort", name)
		}
		switch sort {
		case sortFunc, sortInstance:
			e = asc
		}
	} else if r.b[r.off-1] != 0x00 {
		r.failf("export %q: bad optional type flag", name)
	}
	if sort == sortType {
		e.t = &typ{kind: kNamed, name: name, owner: s, target: e.t, nodes: 1}
	}
	s.exports = append(s.exports, e)
	s.declare(r, e)
}

// declarations reads the body of a component type (imports allowed) or an instance type.
func (s *scope) declarations(r *reader, component bool) {
	if s.depth > maxDepth {
		r.failf("types nested more than %d deep", maxDepth)
	}
	for n := r.count("declaration"); n > 0; n-- {
		switch b := r.byte(); b {
		case 0x00:
			coreType(r)
			s.count(r)
		case 0x01:
			s.addType(r, s.deftype(r))
		case 0x02:
			s.alias(r)
		case 0x03:
			if !component {
				r.failf("import declaration in an instance type")
			}
			e := s.externType(r, nameAttributes(r))
			s.imports = append(s.imports, e)
			s.declare(r, e)
		case 0x04:
			e := s.externType(r, nameAttributes(r))
			s.exports = append(s.exports, e)
			s.declare(r, e)
		default:
			r.failf("unknown declaration %#x", b)
		}
	}
}

// prims maps the primitive value type opcodes to their WIT names.
var prims = map[byte]string{
	0x7f: "bool", 0x7e: "s8", 0x7d: "u8", 0x7c: "s16", 0x7b: "u16", 0x7a: "s32", 0x79: "u32",
	0x78: "s64", 0x77: "u64", 0x76: "f32", 0x75: "f64", 0x74: "char", 0x73: "string",
	0x64: "error-context",
}

var primTypes = func() map[byte]*typ {
	m := map[byte]*typ{}
	for b, n := range prims {
		m[b] = &typ{kind: kPrim, prim: n, nodes: 1}
	}
	return m
}()

// valtype reads a primitive type or a type index.
func (s *scope) valtype(r *reader) *typ {
	if t, ok := primTypes[r.peek()]; ok {
		r.off++
		return t
	}
	i := r.s33()
	if i < 0 {
		r.failf("unknown value type %#x", byte(i&0x7f))
	}
	t := s.typeAt(r, uint32(i))
	switch t.kind {
	case kFunc, kInstance, kComponent, kResource, kCore:
		r.failf("type index %d is not a value type", i)
	}
	return t
}

func (s *scope) optValtype(r *reader) *typ {
	switch b := r.byte(); b {
	case 0x00:
		return nil
	case 0x01:
		return s.valtype(r)
	default:
		r.failf("bad optional type flag %#x", b)
	}
	return nil
}

func (s *scope) labels(r *reader, what string) []string {
	n := r.count(what)
	out := make([]string, n)
	for i := range out {
		out[i] = r.name()
	}
	return out
}

func (s *scope) fields(r *reader, what string) []field {
	n := r.count(what)
	out := make([]field, n)
	for i := range out {
		out[i] = field{name: r.name(), t: s.valtype(r)}
	}
	return out
}

// deftype reads one type definition.
func (s *scope) deftype(r *reader) *typ {
	b := r.byte()
	if t, ok := primTypes[b]; ok {
		return t
	}
	t := &typ{}
	switch b {
	case 0x72:
		t.kind, t.fields = kRecord, s.fields(r, "field")
	case 0x71:
		t.kind = kVariant
		n := r.count("case")
		t.fields = make([]field, n)
		for i := range t.fields {
			t.fields[i] = field{name: r.name(), t: s.optValtype(r)}
			if c := r.byte(); c != 0x00 {
				r.failf("variant case refinement %#x is not supported", c)
			}
		}
	case 0x70:
		t.kind, t.elem = kList, s.valtype(r)
	case 0x67:
		t.kind, t.elem, t.length = kList, s.valtype(r), r.u32()
	case 0x6f:
		t.kind = kTuple
		n := r.count("tuple element")
		t.elems = make([]*typ, n)
		for i := range t.elems {
			t.elems[i] = s.valtype(r)
		}
	case 0x6e:
		t.kind, t.names = kFlags, s.labels(r, "flag")
	case 0x6d:
		t.kind, t.names = kEnum, s.labels(r, "enum case")
	case 0x6b:
		t.kind, t.elem = kOption, s.valtype(r)
	case 0x6a:
		t.kind, t.elem, t.elem2 = kResult, s.optValtype(r), s.optValtype(r)
	case 0x69, 0x68:
		t.kind = kOwn
		if b == 0x68 {
			t.kind = kBorrow
		}
		t.elem = s.typeAt(r, r.u32())
		if res := resolve(t.elem); res.kind != kResource {
			r.failf("handle of a type that is not a resource")
		}
	case 0x66, 0x65:
		t.kind = kStream
		if b == 0x65 {
			t.kind = kFuture
		}
		t.elem = s.optValtype(r)
	case 0x63:
		t.kind, t.elem, t.elem2 = kMap, s.valtype(r), s.valtype(r)
	case 0x40, 0x43:
		t.kind, t.async = kFunc, b == 0x43
		t.fields = s.fields(r, "parameter")
		switch c := r.byte(); c {
		case 0x00:
			t.result = s.valtype(r)
		case 0x01:
			if d := r.byte(); d != 0x00 {
				r.failf("named function results are not supported")
			}
		default:
			r.failf("bad result list %#x", c)
		}
	case 0x41, 0x42:
		t.kind = kInstance
		if b == 0x41 {
			t.kind = kComponent
		}
		t.sc = s.child()
		t.sc.declarations(r, b == 0x41)
		return t
	case 0x3f:
		t.kind = kResource
		coreValtype(r)
		if r.byte() == 0x01 {
			r.u32()
		} else if r.b[r.off-1] != 0x00 {
			r.failf("bad optional destructor flag")
		}
		return t
	default:
		r.failf("unknown type definition %#x", b)
	}
	t.nodes = 1
	for _, c := range children(t) {
		if c != nil {
			t.nodes += c.nodes
		}
	}
	if t.nodes > maxTypeNodes {
		r.failf("type spelled out has more than %d parts", maxTypeNodes)
	}
	return t
}

// children lists the types t refers to directly.
func children(t *typ) []*typ {
	out := append([]*typ{t.elem, t.elem2, t.result}, t.elems...)
	for _, f := range t.fields {
		out = append(out, f.t)
	}
	return out
}

// resolve follows the type imports of nested components to what was supplied, and named
// types to what they equal, to the definition underneath.
func resolve(t *typ) *typ {
	for range 1 << 16 {
		if t.kind != kNamed || t.target == nil && t.bound == nil {
			return t
		}
		if t.bound != nil {
			t = t.bound
		} else {
			t = t.target
		}
	}
	return t
}

func (s *scope) canon(r *reader) {
	switch b := r.byte(); b {
	case 0x00: // lift
		if c := r.byte(); c != 0x00 {
			r.failf("canon lift of core sort %#x", c)
		}
		r.u32()
		canonOpts(r)
		t := s.typeAt(r, r.u32())
		if t.kind != kFunc {
			r.failf("canon lift with a type that is not a function type")
		}
		s.count(r)
		s.funcs = append(s.funcs, t)
	case 0x01: // lower
		if c := r.byte(); c != 0x00 {
			r.failf("canon lower of sort %#x", c)
		}
		r.u32()
		canonOpts(r)
	case 0x02, 0x03, 0x04, 0x0e, 0x13, 0x14, 0x15, 0x1a, 0x1b:
		r.u32()
	case 0x24, 0x25, 0x05, 0x0d, 0x1e, 0x1f, 0x22, 0x23, 0x26, 0x28:
	case 0x09:
		switch c := r.byte(); c {
		case 0x00:
			s.valtype(r)
		case 0x01:
			r.byte()
		default:
			r.failf("bad result list %#x", c)
		}
		canonOpts(r)
	case 0x0a, 0x0b:
		r.byte()
		r.u32()
	case 0x06, 0x0c, 0x29, 0x2a, 0x2b, 0x2c, 0x2d:
		r.byte()
	case 0x0f, 0x10, 0x16, 0x17:
		r.u32()
		canonOpts(r)
	case 0x11, 0x12, 0x18, 0x19:
		r.u32()
		r.byte()
	case 0x1c, 0x1d:
		canonOpts(r)
	case 0x20, 0x21:
		r.byte()
		r.u32()
	case 0x27:
		r.u32()
		r.u32()
	case 0x40:
		r.byte()
		r.u32()
	case 0x41:
		r.byte()
		r.u32()
		r.u32()
	case 0x42:
		r.byte()
	default:
		r.failf("unknown canonical definition %#x", b)
	}
}

func canonOpts(r *reader) {
	for n := r.count("canonical option"); n > 0; n-- {
		switch b := r.byte(); b {
		case 0x00, 0x01, 0x02, 0x06:
		case 0x03, 0x04, 0x05, 0x07:
			r.u32()
		default:
			r.failf("unknown canonical option %#x", b)
		}
	}
}

// coreType skips a core type inside a component or instance type declaration: a module type
// or a function type.
func coreType(r *reader) {
	coreTypeDepth(r, 0)
}

func coreTypeDepth(r *reader, depth int) {
	switch b := r.byte(); b {
	case 0x60:
		for range 2 {
			for n := r.count("value type"); n > 0; n-- {
				coreValtype(r)
			}
		}
	case 0x50:
		if depth > 0 {
			r.failf("module type inside a module type")
		}
		for n := r.count("module declaration"); n > 0; n-- {
			switch d := r.byte(); d {
			case 0x00:
				r.name()
				r.name()
				coreExternType(r)
			case 0x01:
				coreTypeDepth(r, depth+1)
			case 0x02:
				if r.byte() != 0x10 || r.byte() != 0x01 {
					r.failf("unknown core alias")
				}
				r.u32()
				r.u32()
			case 0x03:
				r.name()
				coreExternType(r)
			default:
				r.failf("unknown module declaration %#x", d)
			}
		}
	default:
		r.failf("core type %#x is not supported (only function and module types)", b)
	}
}

func coreValtype(r *reader) {
	switch b := r.byte(); b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
	case 0x63, 0x64:
		r.s33()
	default:
		r.failf("unknown core value type %#x", b)
	}
}

func coreExternType(r *reader) {
	switch b := r.byte(); b {
	case 0x00:
		r.u32()
	case 0x01:
		coreValtype(r)
		limits(r)
	case 0x02:
		limits(r)
	case 0x03:
		coreValtype(r)
		r.byte()
	case 0x04:
		r.byte()
		r.u32()
	default:
		r.failf("unknown core extern type %#x", b)
	}
}

func limits(r *reader) {
	flags := r.byte()
	if flags > 0x0f {
		r.failf("unknown limits flags %#x", flags)
	}
	r.u64()
	if flags&0x01 != 0 {
		r.u64()
	}
	if flags&0x08 != 0 {
		r.u32()
	}
}
