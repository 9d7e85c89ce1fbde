//go:build wasip1

package extism

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env free
func free(off uint64)

//go:wasmimport extism:host/env length
func length(off uint64) uint64

//go:wasmimport extism:host/env load_u64
func loadU64(off uint64) uint64

//go:wasmimport extism:host/env load_u8
func loadU8(off uint64) uint32

//go:wasmimport extism:host/env store_u64
func storeU64(off, v uint64)

//go:wasmimport extism:host/env store_u8
func storeU8(off uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(off uint64)

// The kernel's 64-bit loads and stores are cheap in the Go SDK; its byte-wise ones (and every
// other kernel function) cost a call into the kernel module each. So blocks move in 64-bit
// words, and a tail shorter than a word is moved as the block's last (overlapping) word.

// readWords fills b with the n bytes at off, reading them with load (a 64-bit load) or, for
// blocks shorter than a word, with loadByte.
func readWords(b []byte, load func(uint64) uint64, loadByte func(uint64) uint32) {
	n := uint64(len(b))
	if n < 8 {
		for i := range b {
			b[i] = byte(loadByte(uint64(i)))
		}
		return
	}
	for i := uint64(0); i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Pointer(&b[i])) = load(i)
	}
	if n%8 != 0 {
		*(*uint64)(unsafe.Pointer(&b[n-8])) = load(n - 8)
	}
}

// input returns the call's input.
func input() []byte {
	b := make([]byte, inputLength())
	readWords(b, inputLoadU64, inputLoadU8)
	return b
}

// store copies b into a new Extism block and returns its offset.
func store(b []byte) uint64 {
	n := uint64(len(b))
	off := alloc(n)
	if n < 8 {
		for i, c := range b {
			storeU8(off+uint64(i), uint32(c))
		}
		return off
	}
	for i := uint64(0); i+8 <= n; i += 8 {
		storeU64(off+i, *(*uint64)(unsafe.Pointer(&b[i])))
	}
	if n%8 != 0 {
		storeU64(off+n-8, *(*uint64)(unsafe.Pointer(&b[n-8])))
	}
	return off
}

// load copies the Extism block at off into the plugin's memory and frees the block.
func load(off uint64) []byte {
	b := make([]byte, length(off))
	readWords(b, func(i uint64) uint64 { return loadU64(off + i) }, func(i uint64) uint32 { return loadU8(off + i) })
	free(off)
	return b
}

// Error is the error case of a host function's envelope: Kind is the host's name for it
// ("denied", "refused", ...).
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Error implements error: the kind, then the message.
func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// CallHost sends req as JSON to the host function name, imported as f (a //go:wasmimport of
// extism:host/user), and decodes its envelope's value into out (when not nil). The host's
// error is an *Error; the other errors name the function and what failed.
func CallHost(name string, f func(uint64) uint64, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode the request: %w", name, err)
	}
	in := store(b)
	env := load(f(in))
	free(in)
	var res struct {
		OK    json.RawMessage `json:"ok"`
		Error *Error          `json:"error"`
	}
	if err := json.Unmarshal(env, &res); err != nil {
		return fmt.Errorf("%s: the host's answer is not a JSON envelope: %w", name, err)
	}
	if res.Error != nil {
		return res.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.OK, out); err != nil {
		return fmt.Errorf("%s: decode the host's answer: %w", name, err)
	}
	return nil
}

// Export runs a plugin function (call it from a //go:wasmexport function and return its
// result): it decodes the call's JSON input into In, calls f and sets the JSON of its result
// as the output (a json.RawMessage as is, after checking that it is JSON; nil sets none), or
// its error as the call's error, returning 1.
func Export[In any](f func(In) (any, error)) int32 {
	var in In
	if b := input(); len(b) > 0 {
		if err := json.Unmarshal(b, &in); err != nil {
			return fail(fmt.Errorf("bad input: %w", err))
		}
	}
	out, err := f(in)
	if err != nil {
		return fail(err)
	}
	if out == nil {
		return 0
	}
	b, ok := out.(json.RawMessage)
	switch {
	case !ok:
		if b, err = json.Marshal(out); err != nil {
			return fail(fmt.Errorf("encode the result: %w", err))
		}
	case !json.Valid(b):
		return fail(fmt.Errorf("the result is not JSON (%d bytes)", len(b)))
	}
	outputSet(store(b), uint64(len(b)))
	return 0
}

// fail sets err as the call's error and returns Extism's failure code. An error without a
// message gets one: an empty message would be no error at all to the host.
func fail(err error) int32 {
	msg := err.Error()
	if msg == "" {
		msg = fmt.Sprintf("an error without a message (%T)", err)
	}
	errorSet(store([]byte(msg)))
	return 1
}
