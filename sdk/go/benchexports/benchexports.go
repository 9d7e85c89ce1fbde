//go:build wasip1

// Package benchexports holds the three exports the runtime benchmarks call on every example
// gadget: noop, echo (a string) and roundtrip (the sample record {id, name, tags, score, done}).
// A Go gadget gets them by importing this package for its side effect and declaring them in its
// WIT world:
//
//	export noop: func();
//	export echo: func(s: string) -> string;
//	export roundtrip: func(r: sample) -> sample;
package benchexports

import "atelier/sdk/go/cabi"

//go:wasmexport noop
func noop() {}

//go:wasmexport echo
func echo(ptr, n uint32) uint32 {
	return cabi.ReturnString(cabi.TakeString(ptr, n))
}

// roundtrip takes the flattened sample record {id, name, tags, score, done} and returns a
// pointer to it laid out in memory: id@0, name@4, tags@12, score@24, done@32 (40 bytes).
//
//go:wasmexport roundtrip
func roundtrip(id, namePtr, nameLen, tagsPtr, tagsLen uint32, score float64, done uint32) uint32 {
	name := cabi.TakeString(namePtr, nameLen)
	tags := cabi.TakeStrings(tagsPtr, tagsLen)

	ret := cabi.Results(40)
	cabi.Store32(ret, id)
	p, l := cabi.LowerString(name)
	cabi.Store32(ret+4, p)
	cabi.Store32(ret+8, l)
	p, l = cabi.LowerStrings(tags)
	cabi.Store32(ret+12, p)
	cabi.Store32(ret+16, l)
	cabi.StoreF64(ret+24, score)
	if done != 0 {
		cabi.Store8(ret+32, 1)
	}
	return ret
}
