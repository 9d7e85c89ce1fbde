package wit

import (
	"slices"
	"strings"
)

// visit states of interfaces, worlds, types and packages during resolution.
const (
	unvisited = iota
	visiting
	done
)

// resolver links the names of a set of packages.
type resolver struct {
	errs     ErrorList
	pkgs     []*Package
	pkgPos   map[*Package]Pos
	ifaces   map[*Interface]int
	worlds   map[*World]int
	deps     map[*Package][]*Package // packages each package refers to
	reported map[string]bool         // missing packages already reported
}

func (r *resolver) errorf(pos Pos, format string, args ...any) {
	r.errs = append(r.errs, errorf(pos, format, args...))
}

// resolve links every name of pkgs and returns them in dependency order.
func resolve(pkgs []*Package, pkgPos map[*Package]Pos) (*Resolve, error) {
	r := &resolver{pkgs: pkgs, pkgPos: pkgPos, ifaces: map[*Interface]int{}, worlds: map[*World]int{},
		deps: map[*Package][]*Package{}, reported: map[string]bool{}}
	for _, p := range pkgs {
		r.checkPackageNames(p)
	}
	for _, p := range pkgs {
		for _, i := range p.Interfaces {
			r.iface(i)
		}
		for _, w := range p.Worlds {
			r.world(w)
		}
		r.checkGates(p)
	}
	order := r.order()
	if len(r.errs) > 0 {
		errs := r.errs.sorted()
		if len(errs) > maxErrors {
			errs = errs[:maxErrors]
		}
		return nil, errs
	}
	return &Resolve{Packages: order}, nil
}

// checkPackageNames refuses two interfaces or worlds of one package with the same name.
func (r *resolver) checkPackageNames(p *Package) {
	seen := map[string]Pos{}
	check := func(name string, pos Pos) {
		if prev, ok := seen[strings.ToLower(name)]; ok {
			r.errorf(pos, "name '%s' is already defined in package %s at %s", name, p.Name, prev)
			return
		}
		seen[strings.ToLower(name)] = pos
	}
	for _, i := range p.Interfaces {
		check(i.Name, i.Pos)
	}
	for _, w := range p.Worlds {
		check(w.Name, w.Pos)
	}
}

// findPackage returns the package a path names, recording the dependency of from on it.
func (r *resolver) findPackage(from *Package, n *PackageName, pos Pos) *Package {
	var found *Package
	var versions []string
	for _, p := range r.pkgs {
		if p.Name.Namespace != n.Namespace || p.Name.Name != n.Name {
			continue
		}
		versions = append(versions, p.Name.String())
		if p.Name.Version == n.Version {
			found = p
		}
	}
	if found == nil && n.Version == "" && len(versions) == 1 {
		found = r.packageNamed(versions[0])
	}
	if found == nil {
		key := pos.File + "|" + n.String()
		if !r.reported[key] {
			r.reported[key] = true
			switch {
			case len(versions) > 0:
				r.errorf(pos, "package %s not found (have %s)", n, strings.Join(versions, ", "))
			default:
				r.errorf(pos, "package %s not found: add it to deps/ or as a nested package block", n)
			}
		}
		return nil
	}
	if found != from && !slices.Contains(r.deps[from], found) {
		r.deps[from] = append(r.deps[from], found)
	}
	return found
}

func (r *resolver) packageNamed(name string) *Package {
	for _, p := range r.pkgs {
		if p.Name.String() == name {
			return p
		}
	}
	return nil
}

// lookupInterface finds the interface path names from scope.
func (r *resolver) lookupInterface(scope *fileScope, path UsePath) *Interface {
	if path.Package == nil {
		if alias, ok := scope.uses[path.Name]; ok {
			if alias.Package == nil {
				if i := scope.pkg.Interface(alias.Name); i != nil {
					return i
				}
				r.errorf(alias.Pos, "interface '%s' is not defined in package %s", alias.Name, scope.pkg.Name)
				return nil
			}
			path = alias
		} else {
			if i := scope.pkg.Interface(path.Name); i != nil {
				return i
			}
			if scope.pkg.World(path.Name) != nil {
				r.errorf(path.Pos, "'%s' is a world, not an interface", path.Name)
				return nil
			}
			r.errorf(path.Pos, "interface '%s' is not defined in package %s (nor by a top-level use)", path.Name, scope.pkg.Name)
			return nil
		}
	}
	p := r.findPackage(scope.pkg, path.Package, path.Pos)
	if p == nil {
		return nil
	}
	if i := p.Interface(path.Name); i != nil {
		return i
	}
	r.errorf(path.Pos, "package %s has no interface '%s'", p.Name, path.Name)
	return nil
}

// lookupWorld finds the world path names from scope.
func (r *resolver) lookupWorld(scope *fileScope, path UsePath) *World {
	p := scope.pkg
	if path.Package != nil {
		if p = r.findPackage(scope.pkg, path.Package, path.Pos); p == nil {
			return nil
		}
	}
	if w := p.World(path.Name); w != nil {
		return w
	}
	r.errorf(path.Pos, "package %s has no world '%s'", p.Name, path.Name)
	return nil
}

// uses links the DefUse items of defs to their targets, resolving the interfaces they name
// first.
func (r *resolver) uses(scope *fileScope, defs []*TypeDef) {
	for _, d := range defs {
		if d.Kind != DefUse {
			continue
		}
		src := r.lookupInterface(scope, d.From)
		if src == nil {
			continue
		}
		if r.ifaces[src] == visiting {
			r.errorf(d.From.Pos, "interface %s depends on itself through 'use'", src.ID())
			continue
		}
		r.iface(src)
		d.FromInterface = src
		if d.Target = src.Type(d.FromName); d.Target == nil {
			what := "a type"
			if src.Func(d.FromName) != nil {
				what = "a type (it is a function)"
			}
			r.errorf(d.Pos, "interface %s has no type '%s': 'use' needs %s", src.ID(), d.FromName, what)
		}
	}
}

// iface resolves interface i once.
func (r *resolver) iface(i *Interface) {
	if r.ifaces[i] != unvisited {
		return
	}
	r.ifaces[i] = visiting
	r.uses(i.scope, i.Types)
	names := newNameSet(r, "interface "+displayName(i.Name, i.inline))
	for _, d := range i.Types {
		names.add(d.Name, d.Pos)
	}
	for _, f := range i.Funcs {
		names.add(f.Name, f.Pos)
	}
	lookup := func(name string) *TypeDef { return i.Type(name) }
	for _, d := range i.Types {
		r.typeDef(d, lookup)
	}
	for _, f := range i.Funcs {
		r.fn(f, lookup)
	}
	r.cycles(i.Types)
	r.ifaces[i] = done
}

// world resolves world w once, after the worlds it includes.
func (r *resolver) world(w *World) {
	if r.worlds[w] != unvisited {
		return
	}
	r.worlds[w] = visiting
	r.uses(w.scope, w.Types)
	lookup := func(name string) *TypeDef { return w.Type(name) }
	types := newNameSet(r, "world "+w.Name)
	for _, d := range w.Types {
		types.add(d.Name, d.Pos)
		r.typeDef(d, lookup)
	}
	r.cycles(w.Types)
	for _, items := range [][]*WorldItem{w.Imports, w.Exports} {
		for _, it := range items {
			switch {
			case it.Func != nil:
				r.fn(it.Func, lookup)
			case it.Path != nil:
				if it.Interface = r.lookupInterface(w.scope, *it.Path); it.Interface != nil {
					r.iface(it.Interface)
				}
			default:
				r.iface(it.Interface)
			}
		}
	}
	w.AllImports = r.items(w, w.Imports, nil, nil, "import", nil)
	w.AllExports = r.items(w, w.Exports, nil, nil, "export", nil)
	for _, inc := range w.Includes {
		inc.World = r.lookupWorld(w.scope, inc.Path)
		if inc.World == nil {
			continue
		}
		if r.worlds[inc.World] == visiting {
			r.errorf(inc.Path.Pos, "world %s includes itself", inc.World.ID())
			continue
		}
		r.world(inc.World)
		renamed := map[string]bool{}
		w.AllImports = r.items(w, inc.World.AllImports, w.AllImports, inc, "import", renamed)
		w.AllExports = r.items(w, inc.World.AllExports, w.AllExports, inc, "export", renamed)
		for _, with := range inc.With {
			if !renamed[with[0]] {
				r.errorf(inc.Pos, "include %s: world %s has no plain-named import or export '%s' to rename", inc.Path, inc.World.ID(), with[0])
			}
		}
	}
	r.worlds[w] = done
}

// items appends add to have, renaming plain names by inc's `with`, dropping interfaces
// already present and refusing duplicate names. renamed collects the names `with` matched.
func (r *resolver) items(w *World, add, have []*WorldItem, inc *Include, dir string, renamed map[string]bool) []*WorldItem {
	keys := map[string]bool{}
	for _, it := range have {
		if it.Interface != nil || it.Name != "" {
			keys[strings.ToLower(it.Key())] = true
		}
	}
	for _, it := range add {
		if it.Kind == ItemInterface && it.Interface == nil {
			continue // its path did not resolve; already reported
		}
		if inc != nil && it.Name != "" {
			for _, with := range inc.With {
				if with[0] == it.Name {
					c := *it
					c.Name = with[1]
					it = &c
					renamed[with[0]] = true
				}
			}
		}
		key := strings.ToLower(it.Key())
		if keys[key] {
			switch {
			case it.Name == "" && inc != nil:
				continue // the same interface twice: one copy
			case inc != nil:
				r.errorf(inc.Pos, "include %s: %s '%s' is already a name of world %s (rename it with `with { %s as new-name }`)", inc.Path, dir, it.Name, w.Name, it.Name)
			default:
				r.errorf(it.Pos, "%s '%s' appears twice in world %s", dir, it.Key(), w.Name)
			}
			continue
		}
		keys[key] = true
		have = append(have, it)
	}
	return have
}

// typeDef resolves the types a definition mentions.
func (r *resolver) typeDef(d *TypeDef, lookup func(string) *TypeDef) {
	switch d.Kind {
	case DefAlias:
		r.typ(d.Alias, lookup)
	case DefRecord:
		names := newNameSet(r, "record "+d.Name)
		for _, f := range d.Fields {
			names.add(f.Name, f.Pos)
			r.typ(f.Type, lookup)
		}
	case DefVariant:
		names := newNameSet(r, "variant "+d.Name)
		for _, c := range d.Cases {
			names.add(c.Name, c.Pos)
			if c.Type != nil {
				r.typ(c.Type, lookup)
			}
		}
	case DefEnum, DefFlags:
		names := newNameSet(r, d.Kind.String()+" "+d.Name)
		for _, n := range d.Names {
			names.add(n.Name, n.Pos)
		}
	case DefResource:
		names := newNameSet(r, "resource "+d.Name)
		for _, f := range slices.Concat(d.Methods, d.Statics) {
			names.add(f.Name, f.Pos)
		}
		if c := d.Constructor; c != nil {
			r.fn(c, lookup)
			if res := c.Result; res != nil && !(res.Kind == Result && res.Ok != nil && res.Ok.Kind == Named && res.Ok.Def != nil && res.Ok.Def.Underlying() == d) {
				r.errorf(res.Pos, "the constructor of %s must return nothing or result<%s, E>, not %s", d.Name, d.Name, res)
			}
		}
		for _, f := range slices.Concat(d.Methods, d.Statics) {
			r.fn(f, lookup)
		}
	}
}

// fn resolves a function's parameter and result types.
func (r *resolver) fn(f *Func, lookup func(string) *TypeDef) {
	names := newNameSet(r, "the parameters of "+funcLabel(f))
	if f.Kind == Method {
		names.add("self", f.Pos)
	}
	for _, p := range f.Params {
		names.add(p.Name, p.Pos)
		r.typ(p.Type, lookup)
	}
	if f.Result != nil {
		r.typ(f.Result, lookup)
	}
}

func funcLabel(f *Func) string {
	if f.Kind == Constructor {
		return "the constructor"
	}
	return f.Name
}

// typ resolves the names in t.
func (r *resolver) typ(t *Type, lookup func(string) *TypeDef) {
	switch t.Kind {
	case Named, Own, Borrow:
		t.Def = lookup(t.Name)
		if t.Def == nil {
			r.errorf(t.Pos, "type '%s' is not defined (define it or bring it in with 'use')", t.Name)
			return
		}
		if t.Kind != Named {
			if u := t.Def.Underlying(); u.Kind != DefResource && !(u.Kind == DefUse && u.Target == nil) {
				r.errorf(t.Pos, "%s<%s>: '%s' is a %s, not a resource", t.Kind, t.Name, t.Name, u.Kind)
			}
		}
	case Map:
		r.typ(t.Key, lookup)
		switch t.Key.Kind {
		case Bool, S8, S16, S32, S64, U8, U16, U32, U64, Char, String:
		default:
			r.errorf(t.Key.Pos, "map keys must be integers, bool, char or string, not %s", t.Key)
		}
		r.typ(t.Elem, lookup)
	case Result:
		for _, s := range []*Type{t.Ok, t.Err} {
			if s != nil {
				r.typ(s, lookup)
			}
		}
	case Tuple:
		for _, e := range t.Elems {
			r.typ(e, lookup)
		}
	case List, Option, Future, Stream:
		if t.Elem != nil {
			r.typ(t.Elem, lookup)
		}
	}
}

// cycles reports named types of one scope that contain themselves. Handles do not count: a
// record may hold a handle of a resource.
func (r *resolver) cycles(defs []*TypeDef) {
	state := map[*TypeDef]int{}
	var visit func(d *TypeDef) bool
	var walk func(t *Type) bool
	walk = func(t *Type) bool {
		if t == nil {
			return false
		}
		switch t.Kind {
		case Named:
			return t.Def != nil && visit(t.Def)
		case Own, Borrow:
			return false
		}
		return walk(t.Elem) || walk(t.Key) || walk(t.Ok) || walk(t.Err) || slices.ContainsFunc(t.Elems, walk)
	}
	visit = func(d *TypeDef) bool {
		switch state[d] {
		case visiting:
			return true
		case done:
			return false
		}
		if !slices.Contains(defs, d) {
			return false // defined in another scope, which was checked on its own
		}
		state[d] = visiting
		found := walk(d.Alias) ||
			slices.ContainsFunc(d.Fields, func(f Field) bool { return walk(f.Type) }) ||
			slices.ContainsFunc(d.Cases, func(c Case) bool { return walk(c.Type) })
		state[d] = done
		return found
	}
	for _, d := range defs {
		if state[d] == unvisited && visit(d) {
			r.errorf(d.Pos, "type '%s' refers to itself", d.Name)
		}
	}
}

// checkGates applies the feature-gate rules that need the package: a gated item needs a
// versioned package, and @deprecated needs @since.
func (r *resolver) checkGates(p *Package) {
	check := func(g Gates, pos Pos) {
		if g == (Gates{}) {
			return
		}
		if p.Name.Version == "" {
			r.errorf(pos, "a feature gate needs a versioned package: package %s has no version", p.Name)
		}
		if g.Deprecated != "" && g.Since == "" {
			r.errorf(pos, "@deprecated needs a @since on the same item")
		}
	}
	var ifaceGates func(i *Interface)
	ifaceGates = func(i *Interface) {
		check(i.Gates, i.Pos)
		for _, d := range i.Types {
			check(d.Gates, d.Pos)
			for _, f := range slices.Concat(d.Methods, d.Statics) {
				check(f.Gates, f.Pos)
			}
			if d.Constructor != nil {
				check(d.Constructor.Gates, d.Constructor.Pos)
			}
		}
		for _, f := range i.Funcs {
			check(f.Gates, f.Pos)
		}
	}
	for _, i := range p.Interfaces {
		ifaceGates(i)
	}
	for _, w := range p.Worlds {
		check(w.Gates, w.Pos)
		for _, d := range w.Types {
			check(d.Gates, d.Pos)
		}
		for _, it := range slices.Concat(w.Imports, w.Exports) {
			check(it.Gates, it.Pos)
			if it.Path == nil && it.Interface != nil {
				for _, d := range it.Interface.Types {
					check(d.Gates, d.Pos)
				}
				for _, f := range it.Interface.Funcs {
					check(f.Gates, f.Pos)
				}
			}
		}
		for _, inc := range w.Includes {
			check(inc.Gates, inc.Pos)
		}
	}
}

// order sorts the packages so that each comes after those it refers to, reporting cycles.
func (r *resolver) order() []*Package {
	state := map[*Package]int{}
	var out []*Package
	var visit func(p *Package, path []string)
	visit = func(p *Package, path []string) {
		switch state[p] {
		case visiting:
			r.errorf(r.pkgPos[p], "packages depend on each other: %s -> %s", strings.Join(path, " -> "), p.Name)
			return
		case done:
			return
		}
		state[p] = visiting
		for _, d := range r.deps[p] {
			visit(d, append(path, p.Name.String()))
		}
		state[p] = done
		out = append(out, p)
	}
	for _, p := range r.pkgs {
		visit(p, nil)
	}
	return out
}

// nameSet refuses names defined twice in one scope (case-insensitively, as WIT requires).
type nameSet struct {
	r     *resolver
	scope string
	seen  map[string]Pos
}

func newNameSet(r *resolver, scope string) *nameSet {
	return &nameSet{r: r, scope: scope, seen: map[string]Pos{}}
}

func (s *nameSet) add(name string, pos Pos) {
	key := strings.ToLower(name)
	if prev, ok := s.seen[key]; ok {
		s.r.errorf(pos, "name '%s' is already defined in %s at %s", name, s.scope, prev)
		return
	}
	s.seen[key] = pos
}
