package gogen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"atelier/sdk/wit"
)

// This file writes the code that moves values across the boundary: between Go values and core
// values ("flat", function parameters and results) and between Go values and linear memory.
// Memory lifting is an expression (compound types get a helper function each); everything
// else is a sequence of statements. Generated locals end in '_' so that they never collide
// with parameters, which are camelCase.

// slot is one core value: a Go expression (a variable when lowering) and its core type, which
// inside a variant's payload is the join of the cases' types at that position.
type slot struct {
	expr string
	typ  core
}

// members returns the Go expressions of a record's fields or a tuple's elements of v.
func members(t *wit.Type, v string) []string {
	t, d := resolved(t)
	var out []string
	if d != nil {
		for _, f := range d.Fields {
			out = append(out, v+"."+exported(f.Name))
		}
		return out
	}
	for i := range t.Elems {
		out = append(out, v+".F"+strconv.Itoa(i))
	}
	return out
}

// variantCase returns the Go tag constant and payload field of case i of the variant d.
func (g *gen) variantCase(d *wit.TypeDef, i int) (tag, field string) {
	return g.defName[d] + exported(d.Cases[i].Name), caseField(d.Cases[i].Name)
}

// fromNatural converts core values xs (of t's own flattening) to the Go value of a scalar,
// flags or handle type t.
func (g *gen) fromNatural(t *wit.Type, xs []string) string {
	r, d := resolved(t)
	if d != nil {
		n := g.defName[d]
		switch d.Kind {
		case wit.DefEnum:
			return n + "(" + xs[0] + ")"
		case wit.DefFlags:
			return n + "(" + xs[0] + ")"
		case wit.DefResource:
			switch {
			case !g.guest[d]:
				return n + "{handle: " + xs[0] + "}"
			case r.Kind == wit.Borrow:
				return "resources" + n + ".Get(" + xs[0] + ")"
			}
			return "take" + n + "(" + xs[0] + ")"
		}
	}
	switch r.Kind {
	case wit.Bool:
		return xs[0] + " != 0"
	case wit.U32, wit.U64, wit.F32, wit.F64:
		return xs[0]
	case wit.Char:
		return "rune(" + xs[0] + ")"
	}
	return g.goType(r) + "(" + xs[0] + ")"
}

// toNatural converts the Go value v of a scalar, flags or handle type t to its core values.
func (g *gen) toNatural(t *wit.Type, v string) []string {
	_, d := resolved(t)
	if d != nil {
		switch d.Kind {
		case wit.DefFlags:
			if len(d.Names) == 0 {
				return nil
			}
		case wit.DefResource:
			if g.guest[d] {
				return []string{"own" + g.defName[d] + "(" + v + ")"}
			}
			return []string{v + ".handle"}
		}
	}
	r, _ := resolved(t)
	switch r.Kind {
	case wit.Bool:
		return []string{"cabi.Bool(" + v + ")"}
	case wit.U32, wit.U64, wit.F32, wit.F64:
		return []string{v}
	case wit.S64:
		return []string{"uint64(" + v + ")"}
	}
	return []string{"uint32(" + v + ")"}
}

// liftFlat writes statements that set target, of t's Go type, from the core values in slots.
func (g *gen) liftFlat(b *bytes.Buffer, t *wit.Type, target string, slots []slot) {
	nat := flat(t)
	at := func(i int) string { return fromCore(slots[i].expr, slots[i].typ, nat[i]) }
	if fs, ok := fields(t); ok {
		k := 0
		for i, m := range members(t, target) {
			n := len(flat(fs[i]))
			g.liftFlat(b, fs[i], m, slots[k:k+n])
			k += n
		}
		return
	}
	if cs, ok := cases(t); ok {
		r, d := resolved(t)
		disc := at(0)
		switch {
		case d != nil && d.Kind == wit.DefEnum:
			fmt.Fprintf(b, "%s = %s(%s)\n", target, g.defName[d], disc)
		case r.Kind == wit.Option:
			e := g.temp("e")
			fmt.Fprintf(b, "if %s != 0 {\nvar %s %s\n", disc, e, g.goType(r.Elem))
			g.liftFlat(b, r.Elem, e, slots[1:])
			fmt.Fprintf(b, "%s = &%s\n}\n", target, e)
		case r.Kind == wit.Result:
			resultBranches(b, r, disc+" != 0", target,
				func() { fmt.Fprintf(b, "%s.IsErr = true\n", target) },
				func(t *wit.Type, x string) { g.liftFlat(b, t, x, slots[1:]) })
		default:
			fmt.Fprintf(b, "switch %s {\n", disc)
			for i, c := range cs {
				tag, field := g.variantCase(d, i)
				fmt.Fprintf(b, "case %d:\n%s.Tag = %s\n", i, target, tag)
				if c != nil {
					g.liftFlat(b, c, target+"."+field, slots[1:])
				}
			}
			fmt.Fprintf(b, "default:\npanic(%q)\n}\n", "invalid case of "+d.Name)
		}
		return
	}
	r, _ := resolved(t)
	switch {
	case r.Kind == wit.String:
		fmt.Fprintf(b, "%s = cabi.TakeString(%s, %s)\n", target, at(0), at(1))
	case r.Kind == wit.List && isBytes(r):
		fmt.Fprintf(b, "%s = cabi.TakeBytes(%s, %s)\n", target, at(0), at(1))
	case r.Kind == wit.List:
		size, _ := layout(r.Elem)
		fmt.Fprintf(b, "%s = cabi.LiftSlice(%s, %s, %d, %s)\n", target, at(0), at(1), size, g.liftFn(r.Elem))
	default:
		xs := make([]string, len(nat))
		for i := range nat {
			xs[i] = at(i)
		}
		if len(xs) > 0 {
			fmt.Fprintf(b, "%s = %s\n", target, g.fromNatural(t, xs))
		}
	}
}

// resultBranches writes `if cond {` with onErr and the err side of the result r (the Go
// value x), else the ok side; each writes the statements of one side's payload.
func resultBranches(b *bytes.Buffer, r *wit.Type, cond, x string, onErr func(), each func(t *wit.Type, x string)) {
	fmt.Fprintf(b, "if %s {\n", cond)
	onErr()
	if r.Err != nil {
		each(r.Err, x+".Err")
	}
	if r.Ok != nil {
		b.WriteString("} else {\n")
		each(r.Ok, x+".Ok")
	}
	b.WriteString("}\n")
}

// lowerFlat writes statements that store the Go value v of type t into the core-value
// variables of slots (which start zeroed). Strings and lists go to the Lowering l_.
func (g *gen) lowerFlat(b *bytes.Buffer, t *wit.Type, v string, slots []slot) {
	nat := flat(t)
	set := func(i int, x string) { fmt.Fprintf(b, "%s = %s\n", slots[i].expr, toCore(x, nat[i], slots[i].typ)) }
	if fs, ok := fields(t); ok {
		k := 0
		for i, m := range members(t, v) {
			n := len(flat(fs[i]))
			g.lowerFlat(b, fs[i], m, slots[k:k+n])
			k += n
		}
		return
	}
	if cs, ok := cases(t); ok {
		r, d := resolved(t)
		switch {
		case d != nil && d.Kind == wit.DefEnum:
			set(0, "uint32("+v+")")
		case r.Kind == wit.Option:
			fmt.Fprintf(b, "if %s != nil {\n", v)
			set(0, "1")
			g.lowerFlat(b, r.Elem, "(*"+v+")", slots[1:])
			b.WriteString("}\n")
		case r.Kind == wit.Result:
			resultBranches(b, r, v+".IsErr", v,
				func() { set(0, "1") },
				func(t *wit.Type, x string) { g.lowerFlat(b, t, x, slots[1:]) })
		default:
			fmt.Fprintf(b, "switch %s.Tag {\n", v)
			for i, c := range cs {
				tag, field := g.variantCase(d, i)
				fmt.Fprintf(b, "case %s:\n", tag)
				set(0, strconv.Itoa(i))
				if c != nil {
					g.lowerFlat(b, c, v+"."+field, slots[1:])
				}
			}
			fmt.Fprintf(b, "default:\npanic(%q)\n}\n", "invalid case of "+d.Name)
		}
		return
	}
	r, _ := resolved(t)
	if r.Kind == wit.String || r.Kind == wit.List {
		p, n := g.temp("p"), g.temp("n")
		switch {
		case r.Kind == wit.String:
			fmt.Fprintf(b, "%s, %s := l_.String(%s)\n", p, n, v)
		case isBytes(r):
			fmt.Fprintf(b, "%s, %s := l_.Bytes(%s)\n", p, n, v)
		default:
			size, _ := layout(r.Elem)
			fmt.Fprintf(b, "%s, %s := cabi.LowerSlice(l_, %s, %d, %s)\n", p, n, v, size, g.lowerFn(r.Elem))
		}
		set(0, p)
		set(1, n)
		return
	}
	for i, x := range g.toNatural(t, v) {
		set(i, x)
	}
}

// compound reports whether t gets lift and lower helper functions (records, tuples and
// variant-like types) rather than inline code.
func compound(t *wit.Type) bool {
	if _, ok := fields(t); ok {
		return true
	}
	if _, ok := cases(t); ok {
		_, d := resolved(t)
		return d == nil || d.Kind != wit.DefEnum
	}
	return false
}

// load returns the expression that reads an unsigned integer of size bytes at addr.
func load(size uint32, addr string) string {
	return fmt.Sprintf("cabi.Load%d(%s)", size*8, addr)
}

// store returns the statement that writes v as an unsigned integer of size bytes at addr.
func store(size uint32, addr, v string) string {
	conv := fmt.Sprintf("uint%d(", size*8)
	if !strings.HasPrefix(v, conv) {
		v = conv + v + ")"
	}
	return fmt.Sprintf("cabi.Store%d(%s, %s)\n", size*8, addr, v)
}

func offset(addr string, off uint32) string {
	if off == 0 {
		return addr
	}
	return addr + "+" + strconv.FormatUint(uint64(off), 10)
}

// memExpr is an expression of t's Go type that lifts the value at addr.
func (g *gen) memExpr(t *wit.Type, addr string) string {
	if compound(t) {
		return g.liftFn(t) + "(" + addr + ")"
	}
	r, d := resolved(t)
	if d != nil {
		switch d.Kind {
		case wit.DefEnum:
			return g.defName[d] + "(" + load(discSize(len(d.Names)), addr) + ")"
		case wit.DefFlags:
			return g.defName[d] + "(" + load(flagsSize(len(d.Names)), addr) + ")"
		case wit.DefResource:
			return g.fromNatural(t, []string{load(4, addr)})
		}
	}
	switch r.Kind {
	case wit.Bool:
		return "cabi.Load8(" + addr + ") != 0"
	case wit.S8, wit.S16, wit.S32, wit.S64:
		size, _ := layout(r)
		return g.goType(r) + "(" + load(size, addr) + ")"
	case wit.U8, wit.U16, wit.U32, wit.U64:
		size, _ := layout(r)
		return load(size, addr)
	case wit.F32:
		return "cabi.LoadF32(" + addr + ")"
	case wit.F64:
		return "cabi.LoadF64(" + addr + ")"
	case wit.Char:
		return "rune(cabi.Load32(" + addr + "))"
	case wit.String:
		return "cabi.LoadString(" + addr + ")"
	}
	if isBytes(r) {
		return "cabi.LoadBytes(" + addr + ")"
	}
	size, _ := layout(r.Elem)
	return fmt.Sprintf("cabi.LoadSlice(%s, %d, %s)", addr, size, g.liftFn(r.Elem))
}

// lowerMem returns statements that store the Go value v of type t at addr.
func (g *gen) lowerMem(t *wit.Type, v, addr string) string {
	if compound(t) {
		return g.lowerFn(t) + "(l_, " + addr + ", " + v + ")\n"
	}
	r, d := resolved(t)
	if d != nil {
		switch d.Kind {
		case wit.DefEnum:
			return store(discSize(len(d.Names)), addr, v)
		case wit.DefFlags:
			if len(d.Names) == 0 {
				return ""
			}
			return store(flagsSize(len(d.Names)), addr, v)
		case wit.DefResource:
			return store(4, addr, g.toNatural(t, v)[0])
		}
	}
	switch r.Kind {
	case wit.Bool:
		return store(1, addr, "cabi.Bool("+v+")")
	case wit.F32:
		return "cabi.StoreF32(" + addr + ", " + v + ")\n"
	case wit.F64:
		return "cabi.StoreF64(" + addr + ", " + v + ")\n"
	case wit.String:
		return "l_.StoreString(" + addr + ", " + v + ")\n"
	case wit.List:
		if isBytes(r) {
			return "l_.StoreBytes(" + addr + ", " + v + ")\n"
		}
		size, _ := layout(r.Elem)
		return fmt.Sprintf("cabi.StoreSlice(l_, %s, %s, %d, %s)\n", addr, v, size, g.lowerFn(r.Elem))
	}
	size, _ := layout(r)
	return store(size, addr, v)
}

// mangle names a type for helper functions: named types by their Go name, anonymous ones by
// their structure with arities, so that different types never share a name.
func (g *gen) mangle(t *wit.Type) string {
	if t == nil {
		return "Void"
	}
	r, d := resolved(t)
	if d != nil {
		if r.Kind == wit.Borrow {
			return "Borrow" + g.defName[d]
		}
		return g.defName[d]
	}
	switch r.Kind {
	case wit.List:
		return "List_" + g.mangle(r.Elem)
	case wit.Option:
		return "Option_" + g.mangle(r.Elem)
	case wit.Result:
		return "Result_" + g.mangle(r.Ok) + "_" + g.mangle(r.Err)
	case wit.Tuple:
		parts := []string{"Tuple" + strconv.Itoa(len(r.Elems))}
		for _, e := range r.Elems {
			parts = append(parts, g.mangle(e))
		}
		return strings.Join(parts, "_")
	}
	return exported(r.Kind.String())
}

// liftFn returns the name of a function `func(p uint32) T` that lifts a t from memory,
// writing it first.
func (g *gen) liftFn(t *wit.Type) string {
	name := "lift" + g.mangle(t)
	if g.done[name] {
		return name
	}
	g.done[name] = true
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s lifts a %s from memory at p.\nfunc %s(p uint32) (v %s) {\n", name, t, name, g.goType(t))
	if !compound(t) {
		fmt.Fprintf(&b, "return %s\n}\n\n", g.memExpr(t, "p"))
		g.helpers.Write(b.Bytes())
		return name
	}
	if fs, ok := fields(t); ok {
		offs, _, _ := offsets(fs)
		for i, m := range members(t, "v") {
			fmt.Fprintf(&b, "%s = %s\n", m, g.memExpr(fs[i], offset("p", offs[i])))
		}
	} else {
		cs, _ := cases(t)
		r, d := resolved(t)
		_, _, pay := variantLayout(cs)
		at := offset("p", pay)
		disc := load(discSize(len(cs)), "p")
		switch r.Kind {
		case wit.Option:
			e := g.temp("e")
			fmt.Fprintf(&b, "if %s != 0 {\n%s := %s\nv = &%s\n}\n", disc, e, g.memExpr(r.Elem, at), e)
		case wit.Result:
			fmt.Fprintf(&b, "if %s != 0 {\nv.IsErr = true\n", disc)
			if r.Err != nil {
				fmt.Fprintf(&b, "v.Err = %s\n", g.memExpr(r.Err, at))
			}
			if r.Ok != nil {
				fmt.Fprintf(&b, "} else {\nv.Ok = %s\n", g.memExpr(r.Ok, at))
			}
			b.WriteString("}\n")
		default:
			fmt.Fprintf(&b, "switch %s {\n", disc)
			for i, c := range cs {
				tag, field := g.variantCase(d, i)
				fmt.Fprintf(&b, "case %d:\nv.Tag = %s\n", i, tag)
				if c != nil {
					fmt.Fprintf(&b, "v.%s = %s\n", field, g.memExpr(c, at))
				}
			}
			fmt.Fprintf(&b, "default:\npanic(%q)\n}\n", "invalid case of "+d.Name)
		}
	}
	b.WriteString("return v\n}\n\n")
	g.helpers.Write(b.Bytes())
	return name
}

// lowerFn returns the name of a function `func(l_ *cabi.Lowering, p uint32, v T)` that lowers
// a t into memory at p, writing it first.
func (g *gen) lowerFn(t *wit.Type) string {
	name := "lower" + g.mangle(t)
	if g.done[name] {
		return name
	}
	g.done[name] = true
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s lowers v, a %s, into memory at p.\nfunc %s(l_ *cabi.Lowering, p uint32, v %s) {\n", name, t, name, g.goType(t))
	switch {
	case !compound(t):
		b.WriteString(g.lowerMem(t, "v", "p"))
	case isFields(t):
		fs, _ := fields(t)
		offs, _, _ := offsets(fs)
		for i, m := range members(t, "v") {
			b.WriteString(g.lowerMem(fs[i], m, offset("p", offs[i])))
		}
	default:
		cs, _ := cases(t)
		r, d := resolved(t)
		_, _, pay := variantLayout(cs)
		at := offset("p", pay)
		ds := discSize(len(cs))
		switch r.Kind {
		case wit.Option:
			fmt.Fprintf(&b, "if v != nil {\n%s%s}\n", store(ds, "p", "1"), g.lowerMem(r.Elem, "*v", at))
		case wit.Result:
			fmt.Fprintf(&b, "if v.IsErr {\n%s", store(ds, "p", "1"))
			if r.Err != nil {
				b.WriteString(g.lowerMem(r.Err, "v.Err", at))
			}
			if r.Ok != nil {
				fmt.Fprintf(&b, "} else {\n%s", g.lowerMem(r.Ok, "v.Ok", at))
			}
			b.WriteString("}\n")
		default:
			fmt.Fprintf(&b, "%s", store(ds, "p", "v.Tag"))
			b.WriteString("switch v.Tag {\n")
			for i, c := range cs {
				if c == nil {
					continue
				}
				tag, field := g.variantCase(d, i)
				fmt.Fprintf(&b, "case %s:\n%s", tag, g.lowerMem(c, "v."+field, at))
			}
			b.WriteString("}\n")
		}
	}
	b.WriteString("}\n\n")
	g.helpers.Write(b.Bytes())
	return name
}

func isFields(t *wit.Type) bool {
	_, ok := fields(t)
	return ok
}
