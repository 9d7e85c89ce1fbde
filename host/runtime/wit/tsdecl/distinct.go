package tsdecl

import (
	"fmt"

	"atelier/host/runtime/wit"
)

// Collision is an export whose name, as callers see it, another export already has: the same
// interface exported at two versions (`acme:app/api@0.1.0` and `@0.2.0` are both `api`), two
// interfaces of the same name in different packages, or kebab names that map to one camelCase
// name (`GETX` and `GET-X` are both `GETX`).
type Collision struct {
	// Name is the name both have: "api", "api.getX", "counter.new", or "Counter#getX" for a
	// method of a resource's handles.
	Name string
	// Export is the export left out and Taken the one that has the name: "fn", "iface#fn", or
	// an interface's full name.
	Export, Taken string
}

// String names both exports and the name they share.
func (c Collision) String() string {
	return fmt.Sprintf("exports %q and %q are both %q to callers", c.Taken, c.Export, c.Name)
}

// Distinct returns exports without the functions and interfaces whose name as callers see it
// (the kernel's RPC names, Declare's members) an earlier export already has, and those it
// left out. The kernel refuses a component with collisions at deploy; Distinct keeps a
// surface built from older code free of duplicates.
func Distinct(exports []wit.Item) ([]wit.Item, []Collision) {
	d := distinct{owners: map[string]string{}}
	var out []wit.Item
	for _, it := range exports {
		switch it.Kind {
		case wit.ItemFunc:
			if d.fn("", "", it) {
				out = append(out, it)
			}
		case wit.ItemInstance:
			if !d.claim(Name(it.Name), it.Name) {
				continue
			}
			kept := it
			kept.Exports = nil
			for _, f := range it.Exports {
				if f.Kind != wit.ItemFunc || d.fn(it.Name+"#", Name(it.Name)+".", f) {
					kept.Exports = append(kept.Exports, f)
				}
			}
			out = append(out, kept)
		default:
			out = append(out, it)
		}
	}
	return out, d.cols
}

type distinct struct {
	owners map[string]string // name as callers see it -> the export that has it
	cols   []Collision
}

// claim gives name to owner, unless another export has it.
func (d *distinct) claim(name, owner string) bool {
	if o, ok := d.owners[name]; ok && o != owner {
		d.cols = append(d.cols, Collision{Name: name, Export: owner, Taken: o})
		return false
	}
	d.owners[name] = owner
	return true
}

// fn claims the name of function f of a scope (owner and name prefixes "" at top level): a
// plain function's member, a resource's property (shared by its constructor and static
// functions) and member in it, or a member of the resource's handles.
func (d *distinct) fn(ownerPrefix, namePrefix string, f wit.Item) bool {
	res, member, method := Member(f.Name)
	owner := ownerPrefix + f.Name
	switch {
	case method:
		return d.claim(namePrefix+TypeName(res)+"#"+member, owner)
	case res != "":
		return d.claim(namePrefix+Name(res), "resource "+ownerPrefix+res) && d.claim(namePrefix+Name(res)+"."+member, owner)
	}
	return d.claim(namePrefix+member, owner)
}
