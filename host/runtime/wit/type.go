package wit

import (
	"strconv"
	"strings"
)

// Kind names the shape of a WIT value type.
type Kind uint8

// The WIT value type kinds. Future, Stream and ErrorContext belong to the component-model async
// proposal: they are reflected for the audit but no value of them can be converted.
const (
	Bool Kind = iota
	S8
	U8
	S16
	U16
	S32
	U32
	S64
	U64
	F32
	F64
	Char
	String
	List
	Record
	Tuple
	Variant
	Enum
	Option
	Result
	Flags
	Own
	Borrow
	Future
	Stream
	ErrorContext
)

// String returns the WIT keyword of k.
func (k Kind) String() string {
	switch k {
	case Bool:
		return "bool"
	case S8:
		return "s8"
	case U8:
		return "u8"
	case S16:
		return "s16"
	case U16:
		return "u16"
	case S32:
		return "s32"
	case U32:
		return "u32"
	case S64:
		return "s64"
	case U64:
		return "u64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	case Char:
		return "char"
	case String:
		return "string"
	case List:
		return "list"
	case Record:
		return "record"
	case Tuple:
		return "tuple"
	case Variant:
		return "variant"
	case Enum:
		return "enum"
	case Option:
		return "option"
	case Result:
		return "result"
	case Flags:
		return "flags"
	case Own:
		return "own"
	case Borrow:
		return "borrow"
	case Future:
		return "future"
	case Stream:
		return "stream"
	case ErrorContext:
		return "error-context"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a WIT value type. Types are immutable once built and safe to share between goroutines.
//
// Which fields are set depends on Kind:
//   - List, Option, Future, Stream: Elem (nil for a payload-less future or stream)
//   - Record: Fields
//   - Tuple: Elems
//   - Variant: Cases (a case's Type is nil when it has no payload)
//   - Enum, Flags: Names
//   - Result: Ok and Err (each nil when absent)
//   - Own, Borrow: Resource (the resource's name when known)
//
// Name is the type's WIT name when the component exports or imports it under a name (records,
// variants, enums, flags and resources always have one in WIT; the reflection API only reports
// it when the type appears as a named item in the same instance).
type Type struct {
	Kind     Kind
	Name     string
	Elem     *Type
	Fields   []Field
	Elems    []*Type
	Cases    []Case
	Names    []string
	Ok, Err  *Type
	Resource string
}

// Field is one field of a record.
type Field struct {
	Name string
	Type *Type
}

// Case is one case of a variant; Type is nil for a case without payload.
type Case struct {
	Name string
	Type *Type
}

// Param is one named parameter of a function.
type Param struct {
	Name string
	Type *Type
}

// FuncType is the signature of a component function. Result is nil for a function that returns
// nothing (the component model allows at most one result).
type FuncType struct {
	Params []Param
	Result *Type
}

// String renders f the way WIT writes it: `func(key: string) -> result<u32, string>`.
func (f *FuncType) String() string {
	var b strings.Builder
	b.WriteString("func(")
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		b.WriteString(": ")
		b.WriteString(p.Type.String())
	}
	b.WriteString(")")
	if f.Result != nil {
		b.WriteString(" -> ")
		b.WriteString(f.Result.String())
	}
	return b.String()
}

// ItemKind names what a component import or export is.
type ItemKind uint8

// The kinds of component items.
const (
	ItemFunc ItemKind = iota
	ItemInstance
	ItemType
	ItemResource
	ItemModule
	ItemComponent
	ItemCoreFunc
)

// String returns a short word for k.
func (k ItemKind) String() string {
	switch k {
	case ItemFunc:
		return "func"
	case ItemInstance:
		return "instance"
	case ItemType:
		return "type"
	case ItemResource:
		return "resource"
	case ItemModule:
		return "core module"
	case ItemComponent:
		return "component"
	}
	return "core func"
}

// Item is one import or export of a component, or one export of an instance.
type Item struct {
	Name string
	Kind ItemKind
	// Func is set for ItemFunc.
	Func *FuncType
	// Type is set for ItemType.
	Type *Type
	// Exports is set for ItemInstance and ItemComponent: the instance's own exports, in order.
	Exports []Item
}

// Interface returns the item's interface name without its version
// (`atelier:host/kv@0.1.0` -> `atelier:host/kv`), which is the name grants use.
func (it Item) Interface() string { return Unversioned(it.Name) }

// Unversioned strips a trailing `@version` from a WIT interface name.
func Unversioned(name string) string {
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		return name[:i]
	}
	return name
}
