package wit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// unit is a set of files that form one package (a directory) or one file, with the nested
// package blocks they hold.
type unit struct {
	path  string
	files []*parsedFile
}

// Load reads WIT from paths and resolves it as one set. Each path is either a file (its package
// plus any nested `package x { ... }` blocks) or a directory, laid out as wit-parser expects:
// the directory's *.wit files form one package, and each entry of its deps/ sub-directory is a
// dependency, a .wit file or a directory of .wit files (deps/ inside deps are not read).
// Load returns the root package of each path, in order. A package defined more than once
// (the same name and version in two places) is taken from the first place that defines it.
// Errors are an ErrorList of positioned *Error values.
func Load(paths ...string) (*Resolve, []*Package, error) {
	var units []unit
	var errs ErrorList
	roots := make([]int, len(paths))
	for i, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, nil, fmt.Errorf("load wit: %w", err)
		}
		if !info.IsDir() {
			u, e := readUnit(path, []string{path})
			roots[i] = len(units)
			units, errs = append(units, u), append(errs, e...)
			continue
		}
		files, err := witFiles(path)
		if err != nil {
			return nil, nil, err
		}
		u, e := readUnit(path, files)
		roots[i] = len(units)
		units, errs = append(units, u), append(errs, e...)
		deps, err := os.ReadDir(filepath.Join(path, "deps"))
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, fmt.Errorf("load wit: %w", err)
		}
		for _, d := range deps {
			dep := filepath.Join(path, "deps", d.Name())
			var files []string
			switch {
			case d.IsDir():
				if files, err = witFiles(dep); err != nil {
					return nil, nil, err
				}
			case strings.HasSuffix(d.Name(), ".wit"):
				files = []string{dep}
			default:
				continue
			}
			u, e := readUnit(dep, files)
			units, errs = append(units, u), append(errs, e...)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs.sorted()
	}
	return build(units, roots)
}

// LoadSource parses and resolves one WIT file held in memory; name is used in positions.
// It returns the file's package (the one its `package x;` declaration names).
func LoadSource(name string, src []byte) (*Resolve, *Package, error) {
	f, err := parseFile(name, src)
	if err != nil {
		return nil, nil, ErrorList{err.(*Error)}
	}
	res, roots, err := build([]unit{{path: name, files: []*parsedFile{f}}}, []int{0})
	if err != nil {
		return nil, nil, err
	}
	return res, roots[0], nil
}

// witFiles lists the .wit files of dir in name order.
func witFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load wit: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wit") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

// readUnit reads and parses files as one unit.
func readUnit(path string, files []string) (unit, ErrorList) {
	u := unit{path: path}
	var errs ErrorList
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			errs = append(errs, &Error{Pos: Pos{File: name}, Msg: err.Error()})
			continue
		}
		f, err := parseFile(name, src)
		if err != nil {
			errs = append(errs, err.(*Error))
			continue
		}
		u.files = append(u.files, f)
	}
	return u, errs
}

// build turns parsed units into packages and resolves them; roots[i] is the index of the unit
// whose package is the i-th root.
func build(units []unit, roots []int) (*Resolve, []*Package, error) {
	var errs ErrorList
	var pkgs []*Package
	pos := map[*Package]Pos{}
	byName := map[string]*Package{}
	add := func(p *Package, at Pos) *Package {
		if prev := byName[p.Name.String()]; prev != nil {
			return prev
		}
		byName[p.Name.String()] = p
		pkgs = append(pkgs, p)
		pos[p] = at
		return p
	}
	rootPkgs := make([]*Package, len(roots))
	for ui, u := range units {
		top, at, e := unitPackage(u)
		errs = append(errs, e...)
		if top != nil {
			top = add(top, at)
		}
		for _, f := range u.files {
			for _, n := range f.nested {
				add(newPackage(n, []*parsedPackage{n}, []string{f.name}), n.namePos)
			}
		}
		for ri, idx := range roots {
			if idx == ui {
				if top == nil && len(e) == 0 {
					at := Pos{File: u.path}
					if len(u.files) == 1 {
						at.Line, at.Column = 1, 1
					}
					errs = append(errs, errorf(at, "no package declaration: start a file with `package namespace:name;`"))
				}
				rootPkgs[ri] = top
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs.sorted()
	}
	res, err := resolve(pkgs, pos)
	if err != nil {
		return nil, nil, err
	}
	return res, rootPkgs, nil
}

// unitPackage merges the top-level items of a unit's files into its package. It returns nil
// when the files declare no package and hold no top-level items (only nested blocks).
func unitPackage(u unit) (*Package, Pos, ErrorList) {
	var named *parsedPackage
	var parts []*parsedPackage
	var files []string
	var errs ErrorList
	for _, f := range u.files {
		parts = append(parts, f.top)
		files = append(files, f.name)
		if f.top.name == nil {
			continue
		}
		if named == nil {
			named = f.top
		} else if *f.top.name != *named.name {
			errs = append(errs, errorf(f.top.namePos, "package %s differs from package %s declared at %s: the files of one directory form one package", f.top.name, named.name, named.namePos))
		}
	}
	if named == nil {
		for _, part := range parts {
			if len(part.ifaces)+len(part.worlds)+len(part.scope.uses) > 0 {
				var first Pos
				switch {
				case len(part.ifaces) > 0:
					first = part.ifaces[0].Pos
				case len(part.worlds) > 0:
					first = part.worlds[0].Pos
				default: // only top-level uses: the first of them
					for _, at := range part.scope.pos {
						if first.Line == 0 || at.Line < first.Line || at.Line == first.Line && at.Column < first.Column {
							first = at
						}
					}
				}
				return nil, Pos{}, append(errs, errorf(first, "no package declaration in %s: start one of its files with `package namespace:name;`", u.path))
			}
		}
		return nil, Pos{}, errs
	}
	return newPackage(named, parts, files), named.namePos, errs
}

// newPackage builds the package named by named.name from parts, linking owners and scopes.
func newPackage(named *parsedPackage, parts []*parsedPackage, files []string) *Package {
	p := &Package{Name: *named.name, Files: files}
	for _, part := range parts {
		if part.docs != "" {
			p.Docs = strings.TrimPrefix(p.Docs+"\n"+part.docs, "\n")
		}
		part.scope.pkg = p
		for _, i := range part.ifaces {
			i.Package = p
		}
		for _, w := range part.worlds {
			w.Package = p
			for _, it := range slices.Concat(w.Imports, w.Exports) {
				if it.Kind == ItemInterface && it.Path == nil {
					it.Interface.Package = p
				}
			}
		}
		p.Interfaces = append(p.Interfaces, part.ifaces...)
		p.Worlds = append(p.Worlds, part.worlds...)
	}
	return p
}

// LoadWorld loads paths (as Load does) and selects world name in the package of the first
// path (as SelectWorld does): what a bindings generator starts from.
func LoadWorld(name string, paths ...string) (*World, error) {
	res, roots, err := Load(paths...)
	if err != nil {
		return nil, err
	}
	return res.SelectWorld(roots[0], name)
}

// SelectWorld picks the world of root that bindings are made for, following the WIT
// conventions: with an empty name, root's only world; with a plain name, root's world of that
// name; with a path ("wasi:cli/command@0.2.12"), that world of any package of r.
func (r *Resolve) SelectWorld(root *Package, name string) (*World, error) {
	switch {
	case name == "":
		if len(root.Worlds) != 1 {
			return nil, fmt.Errorf("package %s has %d worlds: name one (%s)", root.Name, len(root.Worlds), worldNames(root))
		}
		return root.Worlds[0], nil
	case !strings.Contains(name, ":"):
		if w := root.World(name); w != nil {
			return w, nil
		}
		return nil, fmt.Errorf("package %s has no world %q (it has %s)", root.Name, name, worldNames(root))
	}
	pkgName, world, ok := strings.Cut(name, "/")
	if !ok {
		return nil, fmt.Errorf("world %q: want ns:pkg/world[@version]", name)
	}
	if w, v, ok := strings.Cut(world, "@"); ok {
		world, pkgName = w, pkgName+"@"+v
	}
	p := r.Package(pkgName)
	if p == nil {
		return nil, fmt.Errorf("world %q: no package %s", name, pkgName)
	}
	if w := p.World(world); w != nil {
		return w, nil
	}
	return nil, fmt.Errorf("package %s has no world %q (it has %s)", p.Name, world, worldNames(p))
}

func worldNames(p *Package) string {
	if len(p.Worlds) == 0 {
		return "none"
	}
	names := make([]string, len(p.Worlds))
	for i, w := range p.Worlds {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}
