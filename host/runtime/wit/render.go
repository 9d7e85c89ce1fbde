package wit

import "strings"

// String renders t as WIT writes a type reference: a named type by its name, anything else
// structurally (`list<u8>`, `result<option<string>, error>`). Anonymous records, variants,
// enums and flags, which WIT itself cannot write inline, are spelled out as
// `record { a: u32 }`, `variant { none, some(u32) }`, `enum { a, b }` and `flags { a, b }`.
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b, true)
	return b.String()
}

// Definition renders t spelled out even when it has a name: `record point { x: s32, y: s32 }`.
func (t *Type) Definition() string {
	var b strings.Builder
	t.write(&b, false)
	return b.String()
}

func (t *Type) write(b *strings.Builder, useName bool) {
	if t == nil {
		b.WriteString("_")
		return
	}
	if useName && t.Name != "" {
		b.WriteString(t.Name)
		return
	}
	switch t.Kind {
	case List, Option, Future, Stream:
		b.WriteString(t.Kind.String())
		if t.Elem != nil {
			b.WriteByte('<')
			t.Elem.write(b, true)
			b.WriteByte('>')
		}
	case Tuple:
		b.WriteString("tuple<")
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b, true)
		}
		b.WriteByte('>')
	case Result:
		b.WriteString("result")
		switch {
		case t.Ok == nil && t.Err == nil:
		case t.Err == nil:
			b.WriteByte('<')
			t.Ok.write(b, true)
			b.WriteByte('>')
		default:
			b.WriteByte('<')
			t.Ok.write(b, true)
			b.WriteString(", ")
			t.Err.write(b, true)
			b.WriteByte('>')
		}
	case Record:
		t.writeHead(b, "record")
		for i, f := range t.Fields {
			sep(b, i)
			b.WriteString(f.Name)
			b.WriteString(": ")
			f.Type.write(b, true)
		}
		b.WriteString(" }")
	case Variant:
		t.writeHead(b, "variant")
		for i, c := range t.Cases {
			sep(b, i)
			b.WriteString(c.Name)
			if c.Type != nil {
				b.WriteByte('(')
				c.Type.write(b, true)
				b.WriteByte(')')
			}
		}
		b.WriteString(" }")
	case Enum, Flags:
		t.writeHead(b, t.Kind.String())
		for i, n := range t.Names {
			sep(b, i)
			b.WriteString(n)
		}
		b.WriteString(" }")
	case Own, Borrow:
		name := t.Resource
		if name == "" {
			name = "resource"
		}
		if t.Kind == Borrow {
			b.WriteString("borrow<" + name + ">")
		} else {
			b.WriteString(name)
		}
	default:
		b.WriteString(t.Kind.String())
	}
}

func (t *Type) writeHead(b *strings.Builder, word string) {
	b.WriteString(word)
	if t.Name != "" {
		b.WriteByte(' ')
		b.WriteString(t.Name)
	}
	b.WriteString(" {")
}

func sep(b *strings.Builder, i int) {
	if i > 0 {
		b.WriteByte(',')
	}
	b.WriteByte(' ')
}
