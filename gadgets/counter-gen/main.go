//go:build wasip1

// Command counter-gen is the counter gadget (wit/counter.wit) written against bindings that
// `atelier bindgen` generated into ./bindings: the same exports and kv layout as counter-go,
// without any hand-written canonical ABI. Regenerate the bindings after changing the WIT with
//
//	atelier bindgen --lang go --world counter --package bindings --out gadgets/counter-gen/bindings gadgets/counter-gen/wit wit/gadget wit/host
//
// and build the component with `sdk/build-gadget.sh gadgets/counter-gen OUT.wasm`.
package main

import (
	"encoding/binary"
	"strconv"

	"atelier/gadgets/counter-gen/bindings"
)

const countKey = "count"

func main() {}

func init() { bindings.Export(counter{}) }

// counter implements the world's exports (bindings.Exports).
type counter struct{}

// load returns the count; a host error traps (the host drops the instance, state stays as committed).
func load() uint64 {
	v, err := bindings.KvGet(countKey)
	if err != nil {
		panic(err)
	}
	if v == nil || len(*v) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(*v)
}

func (counter) Increment(by uint32) uint64 {
	n := load() + uint64(by)
	if err := bindings.KvSet(countKey, binary.LittleEndian.AppendUint64(nil, n)); err != nil {
		panic(err)
	}
	bindings.LogWrite(bindings.LevelInfo, "increment by "+strconv.FormatUint(uint64(by), 10)+" -> "+strconv.FormatUint(n, 10))
	return n
}

func (counter) Get() uint64 { return load() }

func (counter) Reset() {
	if err := bindings.KvDelete(countKey); err != nil {
		panic(err)
	}
	bindings.LogWrite(bindings.LevelInfo, "reset")
}

func (counter) Noop()                                       {}
func (counter) Echo(s string) string                        { return s }
func (counter) Roundtrip(r bindings.Sample) bindings.Sample { return r }
