//go:build wasip1

// Command counter-go is the counter gadget (wit/counter.wit): a count kept in the gadget's kv
// state under the key "count", plus the shared benchmark exports noop, echo and roundtrip.
// The canonical ABI is written by hand with atelier/sdk/go/cabi; host calls go through
// atelier/sdk/go/host. Build it with `sdk/build-gadget.sh gadgets/counter-go OUT.wasm`.
package main

import (
	"encoding/binary"
	"strconv"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/host"
)

const countKey = "count"

func main() {}

func load() uint64 {
	v, ok, err := host.Get(countKey)
	if err != nil {
		panic(err) // traps: the host drops the instance and keeps the state as committed
	}
	if !ok || len(v) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

func store(n uint64) {
	if err := host.Set(countKey, binary.LittleEndian.AppendUint64(nil, n)); err != nil {
		panic(err)
	}
}

//go:wasmexport increment
func increment(by uint32) uint64 {
	n := load() + uint64(by)
	store(n)
	host.Log(host.Info, "increment by "+strconv.FormatUint(uint64(by), 10)+" -> "+strconv.FormatUint(n, 10))
	return n
}

//go:wasmexport get
func get() uint64 { return load() }

//go:wasmexport reset
func reset() {
	if err := host.Delete(countKey); err != nil {
		panic(err)
	}
	host.Log(host.Info, "reset")
}

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
