package gogen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"atelier/sdk/wit"
)

// param is one parameter of a function as the generated code sees it: its Go name and type.
type param struct {
	name string
	typ  *wit.Type
}

// params returns f's parameters, with a method's `self: borrow<R>` first.
func params(f *wit.Func) []param {
	var ps []param
	if f.Kind == wit.Method {
		ps = append(ps, param{"self", &wit.Type{Kind: wit.Borrow, Name: f.Resource.Name, Def: f.Resource}})
	}
	for _, p := range f.Params {
		ps = append(ps, param{local(p.Name), p.Type})
	}
	return ps
}

// flatParams returns the core values of ps in order.
func flatParams(ps []param) []core {
	var out []core
	for _, p := range ps {
		out = append(out, flat(p.typ)...)
	}
	return out
}

// coreFunc is how a function crosses the canonical ABI: its parameters and their core values
// (spilled to memory when there are too many), its result and the result's core values
// (returned through memory when there are too many).
type coreFunc struct {
	ps     []param
	fps    []core
	spill  bool
	rt     *wit.Type
	fr     []core
	retptr bool
}

// coreFuncOf returns how f crosses the canonical ABI.
func coreFuncOf(f *wit.Func) coreFunc {
	c := coreFunc{ps: params(f), rt: funcResult(f)}
	c.fps = flatParams(c.ps)
	c.spill = len(c.fps) > maxFlatParams
	if c.rt != nil {
		c.fr = flat(c.rt)
	}
	c.retptr = len(c.fr) > maxFlatResults
	return c
}

// tupleOf returns the types of ps, laid out as the record the canonical ABI spills them into.
func tupleOf(ps []param) []*wit.Type {
	ts := make([]*wit.Type, len(ps))
	for i, p := range ps {
		ts[i] = p.typ
	}
	return ts
}

// needsMem reports whether lowering t uses memory (strings and lists).
func needsMem(t *wit.Type) bool {
	if fs, ok := fields(t); ok {
		for _, f := range fs {
			if needsMem(f) {
				return true
			}
		}
		return false
	}
	if cs, ok := cases(t); ok {
		for _, c := range cs {
			if c != nil && needsMem(c) {
				return true
			}
		}
		return false
	}
	r, _ := resolved(t)
	return r.Kind == wit.String || r.Kind == wit.List
}

// coreSig renders core parameters "f0_ uint32, f1_ uint64" and their slots.
func coreSig(cs []core, prefix string) (string, []slot) {
	parts := make([]string, len(cs))
	slots := make([]slot, len(cs))
	for i, c := range cs {
		slots[i] = slot{prefix + strconv.Itoa(i) + "_", c}
		parts[i] = slots[i].expr + " " + c.goType()
	}
	return strings.Join(parts, ", "), slots
}

// items writes the bindings of the world's imports and exports.
func (g *gen) items() error {
	imports, exports := g.interfaces()
	for _, it := range imports {
		if err := g.importItem(it); err != nil {
			return err
		}
	}
	var world []*wit.Func
	for _, it := range exports {
		if it.Kind == wit.ItemFunc {
			world = append(world, it.Func)
			continue
		}
		if err := g.exportInterface(it); err != nil {
			return err
		}
	}
	if len(world) > 0 {
		return g.exportWorldFuncs(world)
	}
	return nil
}

// importItem writes the Go functions of an imported function or interface.
func (g *gen) importItem(it *wit.WorldItem) error {
	if it.Kind == wit.ItemFunc {
		name := exported(it.Func.Name)
		if err := g.claim(name, "the imported function "+it.Func.Name); err != nil {
			return err
		}
		g.importFunc("$root", it.Func, name, "", it.Func.Docs)
		return nil
	}
	iface := it.Interface
	prefix := exported(ifaceName(iface))
	if it.Name != "" {
		prefix = exported(it.Name)
	}
	for _, d := range iface.Types {
		if d.Kind != wit.DefResource || g.guest[d] {
			continue
		}
		n := g.defName[d]
		drop := "wasmimportDrop" + n
		fmt.Fprintf(&g.abi, "//go:wasmimport %s [resource-drop]%s\nfunc %s(handle uint32)\n\n", it.Key(), d.Name, drop)
		fmt.Fprintf(&g.abi, "// Drop drops the handle: the host may free the resource.\nfunc (self %s) Drop() { %s(self.handle) }\n\n", n, drop)
		if c := d.Constructor; c != nil {
			if err := g.claim("New"+n, "the constructor of "+defLabel(d)); err != nil {
				return err
			}
			g.importFunc(it.Key(), c, "New"+n, "", c.Docs)
		}
		for _, m := range d.Methods {
			g.importFunc(it.Key(), m, exported(m.Name), n, m.Docs)
		}
		for _, s := range d.Statics {
			if err := g.claim(n+exported(s.Name), "the static function "+s.Name+" of "+defLabel(d)); err != nil {
				return err
			}
			g.importFunc(it.Key(), s, n+exported(s.Name), "", s.Docs)
		}
	}
	for _, f := range iface.Funcs {
		name := prefix + exported(f.Name)
		if err := g.claim(name, "the function "+f.Name+" of the imported "+iface.ID()); err != nil {
			return err
		}
		g.importFunc(it.Key(), f, name, "", f.Docs)
	}
	return nil
}

// importFunc writes the `//go:wasmimport` declaration of f from module and its Go wrapper
// called name (a method of recv when recv is not "").
func (g *gen) importFunc(module string, f *wit.Func, name, recv, docs string) {
	cf := coreFuncOf(f)

	raw := "wasmimport" + recv + name
	var sig []string
	if cf.spill {
		sig = append(sig, "args_ uint32")
	} else {
		s, _ := coreSig(cf.fps, "f")
		if s != "" {
			sig = append(sig, s)
		}
	}
	if cf.retptr {
		sig = append(sig, "ret_ uint32")
	}
	res := ""
	if len(cf.fr) == 1 {
		res = " " + cf.fr[0].goType()
	}
	fmt.Fprintf(&g.abi, "//go:wasmimport %s %s\nfunc %s(%s)%s\n\n", module, f.CoreName(), raw, strings.Join(sig, ", "), res)

	var b bytes.Buffer
	what := "`" + f.CoreName() + "`"
	if module != "$root" {
		what += " of " + module
	}
	b.WriteString(comment("", name+" calls the imported function "+what+".", docs))
	gsig := g.signature(f)
	if recv != "" {
		fmt.Fprintf(&b, "func (self %s) %s%s {\n", recv, name, gsig)
	} else {
		fmt.Fprintf(&b, "func %s%s {\n", name, gsig)
	}
	mem := cf.spill
	for _, p := range cf.ps {
		mem = mem || needsMem(p.typ)
	}
	if mem {
		b.WriteString("l_ := cabi.ArgLowering()\n")
	}
	var args []string
	if cf.spill {
		offs, size, _ := offsets(tupleOf(cf.ps))
		fmt.Fprintf(&b, "args_ := l_.Alloc(%d)\n", size)
		for i, p := range cf.ps {
			b.WriteString(g.lowerMem(p.typ, p.name, offset("args_", offs[i])))
		}
		args = append(args, "args_")
	} else {
		_, slots := coreSig(cf.fps, "f")
		for _, s := range slots {
			fmt.Fprintf(&b, "var %s %s\n", s.expr, s.typ.goType())
			args = append(args, s.expr)
		}
		k := 0
		for _, p := range cf.ps {
			n := len(flat(p.typ))
			g.lowerFlat(&b, p.typ, p.name, slots[k:k+n])
			k += n
		}
	}
	call := raw + "(" + strings.Join(args, ", ")
	switch {
	case cf.retptr:
		size, _ := layout(cf.rt)
		if len(args) > 0 { // a function without parameters takes the return area alone
			call += ", "
		}
		fmt.Fprintf(&b, "ret_ := cabi.RetArea(%d)\n%sret_)\n", size, call)
	case len(cf.fr) == 1:
		fmt.Fprintf(&b, "r0_ := %s)\n", call)
	default:
		fmt.Fprintf(&b, "%s)\n", call)
	}
	if mem {
		b.WriteString("l_.Free()\n")
	}
	switch {
	case cf.rt == nil:
	case cf.retptr:
		fmt.Fprintf(&b, "r_ := %s\n", g.memExpr(cf.rt, "ret_"))
	default:
		fmt.Fprintf(&b, "var r_ %s\n", g.goType(cf.rt))
		g.liftFlat(&b, cf.rt, "r_", []slot{{"r0_", cf.fr[0]}})
	}
	if cf.rt != nil {
		b.WriteString(g.returnResult(cf.rt))
	}
	b.WriteString("}\n\n")
	g.abi.Write(b.Bytes())
}

// returnResult returns the statements that return r_, the lifted result of type rt: for a
// `result`, as (ok, error).
func (g *gen) returnResult(rt *wit.Type) string {
	ok, errT, is := resultSides(rt)
	if !is {
		return "return r_\n"
	}
	okRet := ""
	if ok != nil {
		okRet = "r_.Ok, "
	}
	errVal := "ErrFailed"
	if errT != nil {
		g.needResultError = true
		errVal = "&ResultError[" + g.goType(errT) + "]{Value: r_.Err}"
	} else {
		g.needErrFailed = true
	}
	return fmt.Sprintf("if r_.IsErr {\nreturn %s%s\n}\nreturn %snil\n", okRet, errVal, okRet)
}

// exportInterface writes the Go interface of an exported WIT interface, its registration and
// the shims of its functions and resources.
func (g *gen) exportInterface(it *wit.WorldItem) error {
	iface := it.Interface
	n := exported(ifaceName(iface))
	if it.Name != "" {
		n = exported(it.Name)
	}
	if err := g.claim(n, "the exported interface "+it.Key()); err != nil {
		return err
	}
	if err := g.claim("Export"+n, "the registration of the exported interface "+it.Key()); err != nil {
		return err
	}
	var methods []string
	var funcs []exportFn
	seen := map[string]bool{}
	add := func(name string, f *wit.Func) error {
		if seen[name] {
			return fmt.Errorf("gogen: world %s: two functions of the exported %s are both the Go method %s", g.world.ID(), it.Key(), name)
		}
		seen[name] = true
		methods = append(methods, comment("\t", name+" implements `"+f.CoreName()+"`.", f.Docs)+"\t"+name+g.signature(f)+"\n")
		funcs = append(funcs, exportFn{f, "export" + n + "()." + name})
		return nil
	}
	for _, d := range iface.Types {
		if d.Kind != wit.DefResource {
			continue
		}
		r := g.defName[d]
		g.guestResource(it.Key(), d)
		if c := d.Constructor; c != nil {
			if err := add("New"+r, c); err != nil {
				return err
			}
		}
		for _, m := range d.Methods {
			funcs = append(funcs, exportFn{m, "self." + exported(m.Name)})
		}
		for _, s := range d.Statics {
			if err := add(r+exported(s.Name), s); err != nil {
				return err
			}
		}
	}
	for _, f := range iface.Funcs {
		if err := add(exported(f.Name), f); err != nil {
			return err
		}
	}
	g.registration(n, "the exported interface "+it.Key(), iface.Docs, methods)
	for _, fn := range funcs {
		g.exportFunc(it.Key()+"#"+fn.f.CoreName(), fn.f, fn.call)
	}
	return nil
}

// exportFn is an exported function and the Go call that implements it (without arguments).
type exportFn struct {
	f    *wit.Func
	call string
}

// exportWorldFuncs writes the Exports interface of the world's own exported functions.
func (g *gen) exportWorldFuncs(fs []*wit.Func) error {
	var methods []string
	for _, f := range fs {
		methods = append(methods, comment("\t", exported(f.Name)+" implements the exported function `"+f.Name+"`.", f.Docs)+"\t"+exported(f.Name)+g.signature(f)+"\n")
	}
	g.registration("Exports", "the set of functions the world "+g.world.Name+" exports", "", methods)
	for _, f := range fs {
		g.exportFunc(f.Name, f, "exportExports()."+exported(f.Name))
	}
	return nil
}

// registration declares the Go interface n with methods, its Export function and the getter
// the shims call.
func (g *gen) registration(n, what, docs string, methods []string) {
	reg := "Export" + n
	if n == "Exports" {
		reg = "Export"
	}
	impl := "impl" + n
	g.types.WriteString(comment("", n+" is "+what+": implement it and register the implementation with "+reg+" from an init function.", docs))
	fmt.Fprintf(&g.types, "type %s interface {\n%s}\n\n", n, strings.Join(methods, ""))
	fmt.Fprintf(&g.types, "var %s %s\n\n", impl, n)
	fmt.Fprintf(&g.types, "// %s registers impl as the implementation of %s.\nfunc %s(impl %s) { %s = impl }\n\n", reg, what, reg, n, impl)
	fmt.Fprintf(&g.abi, "// export%s returns the registered implementation of %s.\nfunc export%s() %s {\n", n, what, n, n)
	fmt.Fprintf(&g.abi, "if %s == nil {\npanic(%q)\n}\nreturn %s\n}\n\n", impl, g.pkg+": no implementation of "+what+": call "+reg+" from an init function", impl)
}

// guestResource writes the table and the canonical functions of a resource the guest exports
// from the interface called key.
func (g *gen) guestResource(key string, d *wit.TypeDef) {
	n := g.defName[d]
	m := "[export]" + key
	fmt.Fprintf(&g.abi, "// resources%s holds the %s values the host has handles to.\nvar resources%s cabi.Resources[%s]\n\n", n, n, n, n)
	fmt.Fprintf(&g.abi, "//go:wasmimport %s [resource-new]%s\nfunc wasmimportNew%s(rep uint32) uint32\n\n", m, d.Name, n)
	fmt.Fprintf(&g.abi, "//go:wasmimport %s [resource-rep]%s\nfunc wasmimportRep%s(handle uint32) uint32\n\n", m, d.Name, n)
	fmt.Fprintf(&g.abi, "//go:wasmimport %s [resource-drop]%s\nfunc wasmimportDrop%s(handle uint32)\n\n", m, d.Name, n)
	fmt.Fprintf(&g.abi, "// own%s lowers v as an own<%s> handle; v stays in the table until the host drops it.\n", n, d.Name)
	fmt.Fprintf(&g.abi, "func own%s(v %s) uint32 { return wasmimportNew%s(resources%s.Add(v)) }\n\n", n, n, n, n)
	fmt.Fprintf(&g.abi, "// take%s lifts an own<%s> handle the host passed back: the value leaves the table and the\n// handle is dropped (the destructor then finds nothing to do).\n", n, d.Name)
	fmt.Fprintf(&g.abi, "func take%s(handle uint32) %s {\nrep := wasmimportRep%s(handle)\nv := resources%s.Get(rep)\nresources%s.Remove(rep)\nwasmimportDrop%s(handle)\nreturn v\n}\n\n", n, n, n, n, n, n)
	fmt.Fprintf(&g.abi, "// wasmexportDtor%s runs when the host drops a %s: Drop runs if the value has it.\n//\n//go:wasmexport %s#[dtor]%s\n", n, d.Name, key, d.Name)
	fmt.Fprintf(&g.abi, "func wasmexportDtor%s(rep uint32) {\nif v, ok := resources%s.Remove(rep); ok {\nif d, ok := any(v).(interface{ Drop() }); ok {\nd.Drop()\n}\n}\n}\n\n", n, n)
}

// exportFunc writes the `//go:wasmexport` shim of f, exported as name, which lifts the
// arguments, runs call (a method call expression without arguments) and lowers the result.
func (g *gen) exportFunc(name string, f *wit.Func, call string) {
	cf := coreFuncOf(f)
	shim := "wasmexport" + mangleExport(name)

	var b bytes.Buffer
	fmt.Fprintf(&b, "//go:wasmexport %s\n", name)
	var sig string
	var slots []slot
	if cf.spill {
		sig = "args_ uint32"
	} else {
		sig, slots = coreSig(cf.fps, "f")
	}
	res := ""
	switch {
	case cf.retptr:
		res = " uint32"
	case len(cf.fr) == 1:
		res = " " + cf.fr[0].goType()
	}
	fmt.Fprintf(&b, "func %s(%s)%s {\n", shim, sig, res)
	var args []string
	if cf.spill {
		offs, _, _ := offsets(tupleOf(cf.ps))
		for i, p := range cf.ps {
			fmt.Fprintf(&b, "%s := %s\n", p.name, g.memExpr(p.typ, offset("args_", offs[i])))
		}
		b.WriteString("cabi.Free(args_)\n")
	} else {
		k := 0
		for _, p := range cf.ps {
			n := len(flat(p.typ))
			fmt.Fprintf(&b, "var %s %s\n", p.name, g.goType(p.typ))
			g.liftFlat(&b, p.typ, p.name, slots[k:k+n])
			k += n
		}
	}
	for _, p := range cf.ps {
		if p.name != "self" {
			args = append(args, p.name)
		}
	}
	call += "(" + strings.Join(args, ", ") + ")"
	ok, errT, isResult := resultSides(cf.rt)
	switch {
	case cf.rt == nil:
		fmt.Fprintf(&b, "%s\n", call)
	case isResult:
		fmt.Fprintf(&b, "var r_ %s\n", g.goType(cf.rt))
		if ok != nil {
			fmt.Fprintf(&b, "ok_, err_ := %s\n", call)
		} else {
			fmt.Fprintf(&b, "err_ := %s\n", call)
		}
		b.WriteString("if err_ != nil {\nr_.IsErr = true\n")
		if errT != nil {
			g.needResultErr = true
			g.needResultError = true
			fmt.Fprintf(&b, "r_.Err = resultErr[%s](%q, err_)\n", g.goType(errT), name)
		}
		if ok != nil {
			b.WriteString("} else {\nr_.Ok = ok_\n")
		}
		b.WriteString("}\n")
	default:
		fmt.Fprintf(&b, "r_ := %s\n", call)
	}
	switch {
	case cf.retptr:
		size, _ := layout(cf.rt)
		fmt.Fprintf(&b, "ret_ := cabi.Results(%d)\n", size)
		if needsMem(cf.rt) || compound(cf.rt) {
			b.WriteString("l_ := new(cabi.Lowering)\n")
		}
		fmt.Fprintf(&b, "%sreturn ret_\n", g.lowerMem(cf.rt, "r_", "ret_"))
	case len(cf.fr) == 1:
		b.WriteString("var o0_ " + cf.fr[0].goType() + "\n")
		g.lowerFlat(&b, cf.rt, "r_", []slot{{"o0_", cf.fr[0]}})
		b.WriteString("return o0_\n")
	}
	b.WriteString("}\n\n")
	if cf.retptr {
		fmt.Fprintf(&b, "// %s frees the results of %s once the host has read them.\n//\n//go:wasmexport cabi_post_%s\nfunc %s(uint32) { cabi.ReleaseResults() }\n\n", "wasmexportPost"+mangleExport(name), name, name, "wasmexportPost"+mangleExport(name))
	}
	g.abi.Write(b.Bytes())
}

// mangleExport turns an export name ("test:echo/guest@0.1.0#[method]counter.get") into part
// of a Go identifier ("TestEchoGuest010MethodCounterGet").
func mangleExport(name string) string {
	var b strings.Builder
	upper := true
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z':
			if upper {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			upper = false
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
}
