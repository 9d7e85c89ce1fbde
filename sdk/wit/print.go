package wit

import (
	"fmt"
	"slices"
	"strings"
)

// Print renders resolved packages as one WIT file: the first with a `package x;` declaration,
// the others as nested `package y { ... }` blocks after it. Doc comments are written as `///`
// lines and feature gates are kept; top-level `use` aliases are not (references are written in
// full). Loading the text back gives the same model.
func Print(pkgs ...*Package) string {
	var b strings.Builder
	for i, p := range pkgs {
		pr := &printer{b: &b, pkg: p}
		pr.docs(p.Docs, "")
		if i == 0 {
			fmt.Fprintf(&b, "package %s;\n", pkgName(p.Name))
			pr.items("")
			continue
		}
		fmt.Fprintf(&b, "\npackage %s {\n", pkgName(p.Name))
		pr.items("  ")
		b.WriteString("}\n")
	}
	return b.String()
}

// printer writes the items of one package.
type printer struct {
	b   *strings.Builder
	pkg *Package
}

func (pr *printer) items(in string) {
	for _, i := range pr.pkg.Interfaces {
		pr.b.WriteString("\n")
		pr.docs(i.Docs, in)
		pr.gates(i.Gates, in)
		fmt.Fprintf(pr.b, "%sinterface %s ", in, ident(i.Name))
		pr.ifaceBody(i, in)
		pr.b.WriteString("\n")
	}
	for _, w := range pr.pkg.Worlds {
		pr.b.WriteString("\n")
		pr.docs(w.Docs, in)
		pr.gates(w.Gates, in)
		fmt.Fprintf(pr.b, "%sworld %s {\n", in, ident(w.Name))
		pr.world(w, in+"  ")
		fmt.Fprintf(pr.b, "%s}\n", in)
	}
}

func (pr *printer) docs(docs, in string) {
	if docs == "" {
		return
	}
	for line := range strings.SplitSeq(docs, "\n") {
		if line == "" {
			fmt.Fprintf(pr.b, "%s///\n", in)
		} else {
			fmt.Fprintf(pr.b, "%s/// %s\n", in, line)
		}
	}
}

func (pr *printer) gates(g Gates, in string) {
	if g.Since != "" {
		fmt.Fprintf(pr.b, "%s@since(version = %s)\n", in, g.Since)
	}
	if g.Unstable != "" {
		fmt.Fprintf(pr.b, "%s@unstable(feature = %s)\n", in, ident(g.Unstable))
	}
	if g.Deprecated != "" {
		fmt.Fprintf(pr.b, "%s@deprecated(version = %s)\n", in, g.Deprecated)
	}
}

// ifaceBody writes `{ ... }` of an interface whose keyword line is already written.
func (pr *printer) ifaceBody(i *Interface, in string) {
	pr.b.WriteString("{\n")
	pr.typeDefs(i.Types, in+"  ")
	for _, f := range i.Funcs {
		pr.fn(f, in+"  ", "")
	}
	fmt.Fprintf(pr.b, "%s}", in)
}

// ref renders how the package being printed names an interface or world of package p.
func (pr *printer) ref(p *Package, name string) string {
	if p == pr.pkg {
		return ident(name)
	}
	s := ident(p.Name.Namespace) + ":" + ident(p.Name.Name) + "/" + ident(name)
	if p.Name.Version != "" {
		s += "@" + p.Name.Version
	}
	return s
}

// pkgName renders a package name with its words escaped where they are keywords.
func pkgName(n PackageName) string {
	return PackageName{Namespace: ident(n.Namespace), Name: ident(n.Name), Version: n.Version}.String()
}

func (pr *printer) typeDefs(defs []*TypeDef, in string) {
	for k := 0; k < len(defs); k++ {
		d := defs[k]
		pr.docs(d.Docs, in)
		pr.gates(d.Gates, in)
		switch d.Kind {
		case DefUse:
			// one statement for consecutive names from the same interface with the same gates
			names := []string{useName(d)}
			for k+1 < len(defs) && defs[k+1].Kind == DefUse && defs[k+1].FromInterface == d.FromInterface &&
				defs[k+1].Gates == d.Gates && defs[k+1].Docs == d.Docs {
				k++
				names = append(names, useName(defs[k]))
			}
			from := d.FromInterface
			fmt.Fprintf(pr.b, "%suse %s.{%s};\n", in, pr.ref(from.Package, from.Name), strings.Join(names, ", "))
		case DefAlias:
			fmt.Fprintf(pr.b, "%stype %s = %s;\n", in, ident(d.Name), d.Alias)
		case DefResource:
			fmt.Fprintf(pr.b, "%sresource %s", in, ident(d.Name))
			if !d.HasBody {
				pr.b.WriteString(";\n")
				continue
			}
			pr.b.WriteString(" {\n")
			if d.Constructor != nil {
				pr.fn(d.Constructor, in+"  ", "")
			}
			for _, f := range d.Methods {
				pr.fn(f, in+"  ", "")
			}
			for _, f := range d.Statics {
				pr.fn(f, in+"  ", "")
			}
			fmt.Fprintf(pr.b, "%s}\n", in)
		default:
			fmt.Fprintf(pr.b, "%s%s %s {\n", in, d.Kind, ident(d.Name))
			for _, f := range d.Fields {
				pr.docs(f.Docs, in+"  ")
				fmt.Fprintf(pr.b, "%s  %s: %s,\n", in, ident(f.Name), f.Type)
			}
			for _, c := range d.Cases {
				pr.docs(c.Docs, in+"  ")
				if c.Type != nil {
					fmt.Fprintf(pr.b, "%s  %s(%s),\n", in, ident(c.Name), c.Type)
				} else {
					fmt.Fprintf(pr.b, "%s  %s,\n", in, ident(c.Name))
				}
			}
			for _, n := range d.Names {
				pr.docs(n.Docs, in+"  ")
				fmt.Fprintf(pr.b, "%s  %s,\n", in, ident(n.Name))
			}
			fmt.Fprintf(pr.b, "%s}\n", in)
		}
	}
}

func useName(d *TypeDef) string {
	if d.Name == d.FromName {
		return ident(d.Name)
	}
	return ident(d.FromName) + " as " + ident(d.Name)
}

// fn writes a function item; prefix goes before its name (`import `, `export `).
func (pr *printer) fn(f *Func, in, prefix string) {
	pr.docs(f.Docs, in)
	pr.gates(f.Gates, in)
	pr.b.WriteString(in + prefix)
	switch f.Kind {
	case Constructor:
		pr.b.WriteString("constructor")
	case Static:
		pr.b.WriteString(ident(f.Name) + ": static ")
	default:
		pr.b.WriteString(ident(f.Name) + ": ")
	}
	if f.Kind != Constructor {
		if f.Async {
			pr.b.WriteString("async ")
		}
		pr.b.WriteString("func")
	}
	pr.b.WriteString(signature(f) + ";\n")
}

// signature renders `(a: T, b: U) -> R`.
func signature(f *Func) string {
	params := make([]string, len(f.Params))
	for i, p := range f.Params {
		params[i] = ident(p.Name) + ": " + p.Type.String()
	}
	s := "(" + strings.Join(params, ", ") + ")"
	if f.Result != nil {
		s += " -> " + f.Result.String()
	}
	return s
}

func (pr *printer) world(w *World, in string) {
	pr.typeDefs(w.Types, in)
	for _, dir := range []string{"import", "export"} {
		items := w.Imports
		if dir == "export" {
			items = w.Exports
		}
		for _, it := range items {
			if it.Kind == ItemFunc {
				pr.fn(it.Func, in, dir+" ")
				continue
			}
			pr.docs(it.Docs, in)
			pr.gates(it.Gates, in)
			switch {
			case it.Path == nil:
				fmt.Fprintf(pr.b, "%s%s %s: interface ", in, dir, ident(it.Name))
				pr.ifaceBody(it.Interface, in)
				pr.b.WriteString("\n")
			case it.Name != "":
				fmt.Fprintf(pr.b, "%s%s %s: %s;\n", in, dir, ident(it.Name), pr.ref(it.Interface.Package, it.Interface.Name))
			default:
				fmt.Fprintf(pr.b, "%s%s %s;\n", in, dir, pr.ref(it.Interface.Package, it.Interface.Name))
			}
		}
	}
	for _, inc := range w.Includes {
		pr.docs(inc.Docs, in)
		pr.gates(inc.Gates, in)
		fmt.Fprintf(pr.b, "%sinclude %s", in, pr.ref(inc.World.Package, inc.World.Name))
		if len(inc.With) > 0 {
			with := slices.Collect(func(yield func(string) bool) {
				for _, w := range inc.With {
					if !yield(ident(w[0]) + " as " + ident(w[1])) {
						return
					}
				}
			})
			fmt.Fprintf(pr.b, " with { %s }", strings.Join(with, ", "))
		}
		pr.b.WriteString(";\n")
	}
}
