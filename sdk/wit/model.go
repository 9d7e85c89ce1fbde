package wit

import (
	"strconv"
	"strings"
)

// PackageName names a WIT package: `namespace:name@version` (Version is "" when absent).
type PackageName struct {
	Namespace string
	Name      string
	Version   string
}

// String renders n as WIT writes it: "wasi:io@0.2.12", "atelier:host".
func (n PackageName) String() string {
	s := n.Namespace + ":" + n.Name
	if n.Version != "" {
		s += "@" + n.Version
	}
	return s
}

// Gates are the feature gates written before an item: `@since(version = 1.2.0)`,
// `@unstable(feature = name)`, `@deprecated(version = 1.3.0)`. Empty fields are absent.
type Gates struct {
	Since      string
	Unstable   string
	Deprecated string
}

// Resolve is a set of resolved packages: every name in them refers to something that exists,
// and neither interfaces (through `use`), worlds (through `include`) nor types refer to
// themselves. Packages come in dependency order (a package after those it uses).
type Resolve struct {
	Packages []*Package
}

// Package returns the package called name ("wasi:io@0.2.12"; without a version, the only
// package of that namespace and name), or nil.
func (r *Resolve) Package(name string) *Package {
	var only *Package
	for _, p := range r.Packages {
		if p.Name.String() == name {
			return p
		}
		if p.Name.Namespace+":"+p.Name.Name == name {
			if only != nil {
				return nil
			}
			only = p
		}
	}
	return only
}

// Package is one WIT package: its interfaces and worlds in the order they were declared
// (files in name order).
type Package struct {
	Name       PackageName
	Docs       string
	Interfaces []*Interface
	Worlds     []*World
	// Files are the files the package was read from (one for a nested `package x { }` block).
	Files []string
}

// Interface returns the interface called name, or nil.
func (p *Package) Interface(name string) *Interface {
	for _, i := range p.Interfaces {
		if i.Name == name {
			return i
		}
	}
	return nil
}

// World returns the world called name, or nil.
func (p *Package) World(name string) *World {
	for _, w := range p.Worlds {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// Interface is a named interface of a package, or an inline `import name: interface { }` of a
// world (then Name is "" and World is set).
type Interface struct {
	Name    string
	Package *Package
	World   *World
	Docs    string
	Gates   Gates
	Pos     Pos
	// Types are the interface's named types, `use`d ones included, in declaration order.
	Types []*TypeDef
	// Funcs are the freestanding functions (resource methods belong to their TypeDef).
	Funcs []*Func

	scope  *fileScope
	inline string // the plain name of an inline interface
}

// ID returns the interface's full name, "wasi:io/streams@0.2.12"; for an inline interface, the
// plain name it is imported or exported under.
func (i *Interface) ID() string {
	if i.Name == "" {
		return i.inline
	}
	n := i.Package.Name
	s := n.Namespace + ":" + n.Name + "/" + i.Name
	if n.Version != "" {
		s += "@" + n.Version
	}
	return s
}

// Type returns the named type called name, or nil.
func (i *Interface) Type(name string) *TypeDef { return findType(i.Types, name) }

// Func returns the freestanding function called name, or nil.
func (i *Interface) Func(name string) *Func {
	for _, f := range i.Funcs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func findType(defs []*TypeDef, name string) *TypeDef {
	for _, d := range defs {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// World is a world of a package: what a component imports and exports.
type World struct {
	Name    string
	Package *Package
	Docs    string
	Gates   Gates
	Pos     Pos
	// Types are the named types declared in or `use`d into the world.
	Types []*TypeDef
	// Imports and Exports are the world's own items, as written.
	Imports []*WorldItem
	Exports []*WorldItem
	// Includes are the world's `include` items.
	Includes []*Include
	// AllImports and AllExports are the items of the world together with those of every world
	// it includes (transitively), renamed by `with` and without duplicate interfaces, set by
	// resolution.
	AllImports []*WorldItem
	AllExports []*WorldItem

	scope *fileScope
}

// ID returns the world's full name, "wasi:cli/command@0.2.12".
func (w *World) ID() string {
	n := w.Package.Name
	s := n.Namespace + ":" + n.Name + "/" + w.Name
	if n.Version != "" {
		s += "@" + n.Version
	}
	return s
}

// Type returns the named type of the world called name, or nil.
func (w *World) Type(name string) *TypeDef { return findType(w.Types, name) }

// ItemKind says what a world item is.
type ItemKind uint8

// The kinds of world items.
const (
	// ItemInterface is an interface: named (`import wasi:io/poll;`, `import x: iface;`) or
	// inline (`import x: interface { ... }`).
	ItemInterface ItemKind = iota
	// ItemFunc is a function (`export run: func();`).
	ItemFunc
)

// WorldItem is one import or export of a world.
type WorldItem struct {
	Kind ItemKind
	// Name is the plain name (`import foo: ...`), or "" for an interface imported or exported
	// by its interface name (`import wasi:io/poll;`): Key then returns that name.
	Name string
	// Path is the interface path as written for a named interface, else nil.
	Path *UsePath
	// Interface is the interface (named or inline) when Kind is ItemInterface.
	Interface *Interface
	// Func is the function when Kind is ItemFunc.
	Func  *Func
	Docs  string
	Gates Gates
	Pos   Pos
}

// Key returns the name the item has in the component: its plain name, or the interface's full
// name ("wasi:io/poll@0.2.12").
func (it *WorldItem) Key() string {
	if it.Name != "" {
		return it.Name
	}
	return it.Interface.ID()
}

// Include is an `include path with { a as b };` item of a world.
type Include struct {
	Path  UsePath
	World *World // set by resolution
	// With renames plain names of the included world: With[i][0] becomes With[i][1].
	With  [][2]string
	Docs  string
	Gates Gates
	Pos   Pos
}

// UsePath is a reference to an interface or a world as written: a bare name in the current
// package (`types`, Package nil) or a qualified one (`wasi:io/streams@0.2.12`).
type UsePath struct {
	Package *PackageName
	Name    string
	Pos     Pos
}

// String renders p as it was written.
func (p UsePath) String() string {
	if p.Package == nil {
		return p.Name
	}
	s := p.Package.Namespace + ":" + p.Package.Name + "/" + p.Name
	if p.Package.Version != "" {
		s += "@" + p.Package.Version
	}
	return s
}

// DefKind says what a named type is.
type DefKind uint8

// The kinds of named types.
const (
	DefRecord DefKind = iota
	DefVariant
	DefEnum
	DefFlags
	DefResource
	// DefAlias is `type name = T;` (Alias holds T).
	DefAlias
	// DefUse is a name brought in by `use path.{name as local}` (From, FromName; Target is
	// the definition it refers to, set by resolution).
	DefUse
)

// String returns the WIT keyword of k ("use" for DefUse, "type" for DefAlias).
func (k DefKind) String() string {
	return [...]string{"record", "variant", "enum", "flags", "resource", "type", "use"}[k]
}

// TypeDef is a named type of an interface or a world.
type TypeDef struct {
	Kind DefKind
	Name string
	// Interface or World is the owner.
	Interface *Interface
	World     *World
	Docs      string
	Gates     Gates
	Pos       Pos

	// Fields of a record.
	Fields []Field
	// Cases of a variant.
	Cases []Case
	// Names of an enum's cases or of flags.
	Names []Name
	// Alias is the aliased type of DefAlias.
	Alias *Type
	// From and FromName are where a DefUse comes from (as written); Target is that definition.
	From     UsePath
	FromName string
	Target   *TypeDef
	// FromInterface is the interface From names, set by resolution.
	FromInterface *Interface
	// Constructor (nil if none), Methods and Statics of a resource. A method's implicit first
	// parameter `self: borrow<R>` is not listed in its Params.
	Constructor *Func
	Methods     []*Func
	Statics     []*Func
	// HasBody is true for a resource written with braces (`resource r { }`), even empty.
	HasBody bool
}

// Underlying follows aliases and uses to the definition d finally names: a record, variant,
// enum, flags, resource, or an alias of an anonymous type.
func (d *TypeDef) Underlying() *TypeDef {
	for range 1000 {
		switch {
		case d.Kind == DefUse && d.Target != nil:
			d = d.Target
		case d.Kind == DefAlias && d.Alias != nil && d.Alias.Kind == Named && d.Alias.Def != nil:
			d = d.Alias.Def
		default:
			return d
		}
	}
	return d
}

// Field is one field of a record.
type Field struct {
	Name string
	Type *Type
	Docs string
	Pos  Pos
}

// Case is one case of a variant; Type is nil for a case without payload.
type Case struct {
	Name string
	Type *Type
	Docs string
	Pos  Pos
}

// Name is one case of an enum or one flag.
type Name struct {
	Name string
	Docs string
	Pos  Pos
}

// FuncKind says what a function is.
type FuncKind uint8

// The kinds of functions.
const (
	Freestanding FuncKind = iota
	Method
	Static
	Constructor
)

// Func is a function: freestanding, or a resource's constructor, method or static function.
type Func struct {
	Kind  FuncKind
	Name  string // "" for a constructor
	Async bool
	// Resource is the resource of a constructor, method or static function.
	Resource *TypeDef
	Params   []Param
	// Result is nil when the function returns nothing (for a constructor: when it returns the
	// resource itself).
	Result *Type
	Docs   string
	Gates  Gates
	Pos    Pos
}

// CoreName returns the name the component model gives f: "get", "[constructor]blob",
// "[method]blob.read", "[static]blob.merge".
func (f *Func) CoreName() string {
	switch f.Kind {
	case Constructor:
		return "[constructor]" + f.Resource.Name
	case Method:
		return "[method]" + f.Resource.Name + "." + f.Name
	case Static:
		return "[static]" + f.Resource.Name + "." + f.Name
	}
	return f.Name
}

// Param is one named parameter.
type Param struct {
	Name string
	Type *Type
	Pos  Pos
}

// Kind is the shape of a Type.
type Kind uint8

// The type kinds.
const (
	Bool Kind = iota
	S8
	S16
	S32
	S64
	U8
	U16
	U32
	U64
	F32
	F64
	Char
	String
	// List is list<Elem>, or list<Elem, Len> when Len > 0.
	List
	Option
	Result
	Tuple
	// Map is map<Key, Elem>.
	Map
	// Future and Stream carry an optional Elem.
	Future
	Stream
	ErrorContext
	// Own and Borrow are handles of the resource Def (written own<r>/borrow<r>).
	Own
	Borrow
	// Named is a reference to the named type Def. When Def's Underlying is a resource, the
	// type is an owned handle of it.
	Named
)

var kindNames = [...]string{"bool", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f32", "f64",
	"char", "string", "list", "option", "result", "tuple", "map", "future", "stream", "error-context",
	"own", "borrow", "named"}

// String returns the WIT keyword of k.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a WIT type as written at a use site.
type Type struct {
	Kind Kind
	// Elem of list, option, future, stream; value of map.
	Elem *Type
	// Key of map.
	Key *Type
	// Len of a fixed-length list (0: a list of any length).
	Len uint32
	// Ok and Err of result (each nil when absent).
	Ok, Err *Type
	// Elems of tuple.
	Elems []*Type
	// Name is the name written for Named, Own and Borrow; Def is what it refers to (set by
	// resolution).
	Name string
	Def  *TypeDef
	Pos  Pos
}

// String renders t as WIT text.
func (t *Type) String() string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

func writeType(b *strings.Builder, t *Type) {
	switch t.Kind {
	case List:
		b.WriteString("list<")
		writeType(b, t.Elem)
		if t.Len > 0 {
			b.WriteString(", " + strconv.FormatUint(uint64(t.Len), 10))
		}
		b.WriteString(">")
	case Option:
		b.WriteString("option<")
		writeType(b, t.Elem)
		b.WriteString(">")
	case Result:
		b.WriteString("result")
		switch {
		case t.Ok != nil && t.Err != nil:
			b.WriteString("<")
			writeType(b, t.Ok)
			b.WriteString(", ")
			writeType(b, t.Err)
			b.WriteString(">")
		case t.Ok != nil:
			b.WriteString("<")
			writeType(b, t.Ok)
			b.WriteString(">")
		case t.Err != nil:
			b.WriteString("<_, ")
			writeType(b, t.Err)
			b.WriteString(">")
		}
	case Tuple:
		b.WriteString("tuple<")
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			writeType(b, e)
		}
		b.WriteString(">")
	case Map:
		b.WriteString("map<")
		writeType(b, t.Key)
		b.WriteString(", ")
		writeType(b, t.Elem)
		b.WriteString(">")
	case Future, Stream:
		b.WriteString(t.Kind.String())
		if t.Elem != nil {
			b.WriteString("<")
			writeType(b, t.Elem)
			b.WriteString(">")
		}
	case Own, Borrow:
		b.WriteString(t.Kind.String() + "<" + ident(t.Name) + ">")
	case Named:
		b.WriteString(ident(t.Name))
	default:
		b.WriteString(t.Kind.String())
	}
}

// ident renders a name, escaped with '%' when it is a keyword.
func ident(name string) string {
	if keywords[name] {
		return "%" + name
	}
	return name
}
