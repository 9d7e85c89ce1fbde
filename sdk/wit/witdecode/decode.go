// Package witdecode reads the WIT a WebAssembly component declares from its binary: the
// world of its imports and exports, and every interface they name, with each type under its
// own name. It is pure Go and reads the component model binary format itself (component,
// type, import, export, alias, instance and canon sections, and the component-name section);
// it neither validates nor runs the component.
//
// Names come from where the component model keeps them: an imported interface is an instance
// type whose exports name its types and functions; an exported interface is an instance of a
// nested component whose exports do the same. Types are followed by identity, not by
// structure, so two records with the same fields keep their own names, `type a = b` stays an
// alias, a type `use`d from another interface stays a `use`, and a resource handle in a
// signature is written with the resource's name.
//
// The world is named root:component/root, as wasm-tools names a decoded component's world.
//
// Every length and count read from the file is checked against what is left of it, nesting
// and the number of definitions are bounded, and a malformed file gives an error saying where,
// never a panic.
package witdecode

import (
	"errors"
	"fmt"

	"atelier/sdk/wit"
)

// Result is the WIT of a component.
type Result struct {
	// Resolve holds the packages: root:component (with the world) first, then the package of
	// every interface the component imports or exports, in order of first mention.
	Resolve *wit.Resolve
	// World is the component's world, root:component/root.
	World *wit.World
	// Lines are the component's imports and exports, interface members one by one, in the
	// component's order.
	Lines []Line
}

// ErrMalformed is wrapped by every error about the bytes of the file.
var ErrMalformed = errors.New("malformed component")

// Decode reads the WIT of the component binary b.
func Decode(b []byte) (res *Result, err error) {
	defer func() {
		if e := recover(); e != nil {
			de, ok := e.(decodeError)
			if !ok {
				panic(e)
			}
			res, err = nil, fmt.Errorf("%w: %w", ErrMalformed, de.err)
		}
	}()
	r := &reader{b: b}
	preamble(r)
	top := &scope{counter: new(int)}
	top.component(r)
	bd := newBuilder()
	bd.build(top)
	return &Result{Resolve: bd.res, World: bd.world, Lines: bd.lines}, nil
}

// WIT renders the component's WIT: the root package with its world, then every other package
// as a nested `package ns:name { ... }` block.
func (r *Result) WIT() string {
	return wit.Print(r.Resolve.Packages...)
}
