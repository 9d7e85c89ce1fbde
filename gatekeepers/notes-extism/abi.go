//go:build wasip1

package main

// This file is the whole Extism ABI the plugin needs, written by hand (no PDK): the kernel
// functions of extism:host/env that move bytes between the plugin's memory and Extism's, and
// the host functions of extism:host/user that Atelier provides to gatekeepers. Each host
// function takes a block holding a JSON request and returns a block holding a JSON envelope,
// {"ok": value} or {"error": {"kind": "...", "message": "..."}}.

import (
	"encoding/json"
	"errors"
	"unsafe"
)

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func extismInputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func extismInputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env alloc
func extismAlloc(n uint64) uint64

//go:wasmimport extism:host/env free
func extismFree(off uint64)

//go:wasmimport extism:host/env length
func extismLength(off uint64) uint64

//go:wasmimport extism:host/env load_u64
func extismLoadU64(off uint64) uint64

//go:wasmimport extism:host/env load_u8
func extismLoadU8(off uint64) uint32

//go:wasmimport extism:host/env store_u64
func extismStoreU64(off, v uint64)

//go:wasmimport extism:host/env store_u8
func extismStoreU8(off uint64, v uint32)

//go:wasmimport extism:host/env output_set
func extismOutputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func extismErrorSet(off uint64)

//go:wasmimport extism:host/user fetch
func hostFetch(req uint64) uint64

//go:wasmimport extism:host/user authorize_observation
func hostAuthorizeObservation(obs uint64) uint64

//go:wasmimport extism:host/user submit_action
func hostSubmitAction(action uint64) uint64

//go:wasmimport extism:host/user kv_get
func hostKVGet(req uint64) uint64

//go:wasmimport extism:host/user kv_set
func hostKVSet(req uint64) uint64

//go:wasmimport extism:host/user kv_delete
func hostKVDelete(req uint64) uint64

//go:wasmimport extism:host/user log
func hostLog(req uint64) uint64

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
	b := make([]byte, extismInputLength())
	readWords(b, extismInputLoadU64, extismInputLoadU8)
	return b
}

// store copies b into a new Extism block and returns its offset.
func store(b []byte) uint64 {
	n := uint64(len(b))
	off := extismAlloc(n)
	if n < 8 {
		for i, c := range b {
			extismStoreU8(off+uint64(i), uint32(c))
		}
		return off
	}
	for i := uint64(0); i+8 <= n; i += 8 {
		extismStoreU64(off+i, *(*uint64)(unsafe.Pointer(&b[i])))
	}
	if n%8 != 0 {
		extismStoreU64(off+n-8, *(*uint64)(unsafe.Pointer(&b[n-8])))
	}
	return off
}

// load copies the Extism block at off into the plugin's memory and frees the block.
func load(off uint64) []byte {
	b := make([]byte, extismLength(off))
	readWords(b, func(i uint64) uint64 { return extismLoadU64(off + i) }, func(i uint64) uint32 { return extismLoadU8(off + i) })
	extismFree(off)
	return b
}

// hostError is the error case of a host function's envelope.
type hostError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *hostError) Error() string { return e.Kind + ": " + e.Message }

// callHost sends req as JSON to host function f and decodes its envelope's value into out
// (when not nil).
func callHost(f func(uint64) uint64, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	in := store(b)
	env := load(f(in))
	extismFree(in)
	var res struct {
		OK    json.RawMessage `json:"ok"`
		Error *hostError      `json:"error"`
	}
	if err := json.Unmarshal(env, &res); err != nil {
		return errors.New("bad answer from the host: " + err.Error())
	}
	if res.Error != nil {
		return res.Error
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.OK, out)
}

// export runs a plugin function: it decodes the input into In, calls f and sets the JSON of
// its result as the output, or its error as the call's error (returning 1).
func export[In any](f func(In) (any, error)) int32 {
	var in In
	if b := input(); len(b) > 0 {
		if err := json.Unmarshal(b, &in); err != nil {
			return fail(errors.New("bad input: " + err.Error()))
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
	if !ok {
		if b, err = json.Marshal(out); err != nil {
			return fail(err)
		}
	}
	extismOutputSet(store(b), uint64(len(b)))
	return 0
}

func fail(err error) int32 {
	extismErrorSet(store([]byte(err.Error())))
	return 1
}

// Request is an HTTP request for the host to send; Body travels as base64 in the JSON.
type Request struct {
	Method  string   `json:"method"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
	Body    []byte   `json:"body,omitempty"`
}

// Header is one header line.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Response is the host's answer.
type Response struct {
	Status  int      `json:"status"`
	Headers []Header `json:"headers"`
	Body    []byte   `json:"body"`
}

// Fetch asks the host to send req (host function fetch).
func Fetch(req Request) (*Response, error) {
	var resp Response
	if err := callHost(hostFetch, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Observation is a read about to be returned.
type Observation struct {
	Title       string `json:"title"`
	Description string `json:"description"`
}

// AuthorizeObservation records a read; an error means the data must not be returned.
func AuthorizeObservation(o Observation) error {
	return callHost(hostAuthorizeObservation, o, nil)
}

// ActionKind is the kind of an action.
type ActionKind struct {
	Tag   string `json:"tag"`
	Label string `json:"label"`
}

// Action is a side effect to queue for approval.
type Action struct {
	Title            string     `json:"title"`
	Description      string     `json:"description"`
	Kind             ActionKind `json:"kind"`
	AutoApprovable   bool       `json:"autoApprovable"`
	ImplementsRevert bool       `json:"implementsRevert"`
	Payload          string     `json:"payload"`
}

// SubmitAction queues a and returns its number.
func SubmitAction(a Action) (uint64, error) {
	var id uint64
	err := callHost(hostSubmitAction, a, &id)
	return id, err
}

// KVGet returns the value of key in the gatekeeper's own state.
func KVGet(key string) ([]byte, bool, error) {
	var v *struct {
		Value []byte `json:"value"`
	}
	if err := callHost(hostKVGet, map[string]string{"key": key}, &v); err != nil || v == nil {
		return nil, false, err
	}
	return v.Value, true, nil
}

// KVSet sets key to value.
func KVSet(key string, value []byte) error {
	return callHost(hostKVSet, map[string]any{"key": key, "value": value}, nil)
}

// KVDelete deletes key.
func KVDelete(key string) error {
	return callHost(hostKVDelete, map[string]string{"key": key}, nil)
}

// Log writes a line to the gatekeeper's console at level (debug, info, warn, error).
func Log(level, message string) {
	callHost(hostLog, map[string]string{"level": level, "message": message}, nil)
}
