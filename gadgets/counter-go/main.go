//go:build wasip1

// Command counter-go is the counter gadget (wit/counter.wit): a count kept in the gadget's kv
// state under the key "count", plus the shared benchmark exports noop, echo and roundtrip.
// The canonical ABI is written by hand with atelier/sdk/go/cabi; host calls go through
// atelier/sdk/go/host. Build it with `sdk/build-gadget.sh gadgets/counter-go OUT.wasm`.
package main

import (
	"encoding/binary"
	"strconv"

	_ "atelier/sdk/go/benchexports" // noop, echo, roundtrip: the benchmark exports
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
