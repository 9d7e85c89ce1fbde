//go:build wasip1

package host

import (
	"unsafe"

	"atelier/sdk/go/cabi"
)

// KVErrorKind is the case of `atelier:host/kv.error`.
type KVErrorKind uint8

// The cases of `atelier:host/kv.error`, in WIT order.
const (
	InvalidKey KVErrorKind = iota
	QuotaExceeded
	IO
)

// KVError is an `atelier:host/kv.error` returned by the host.
type KVError struct {
	Kind    KVErrorKind
	Message string
}

// Error implements error: the kind, then the message.
func (e *KVError) Error() string {
	return [...]string{"invalid key", "quota exceeded", "kv io"}[e.Kind] + ": " + e.Message
}

// Entry is one key and its value (`atelier:host/kv.entry`).
type Entry struct {
	Key   string
	Value []byte
}

// Op is one step of a Batch (`atelier:host/kv.op`): Delete removes Key, otherwise Key is set
// to Value.
type Op struct {
	Delete bool
	Key    string
	Value  []byte
}

//go:wasmimport atelier:host/kv@0.1.0 get
func kvGet(key string, ret uint32)

//go:wasmimport atelier:host/kv@0.1.0 set
func kvSet(key string, value unsafe.Pointer, valueLen uint32, ret uint32)

//go:wasmimport atelier:host/kv@0.1.0 delete
func kvDelete(key string, ret uint32)

//go:wasmimport atelier:host/kv@0.1.0 list
func kvList(prefix string, limit uint32, ret uint32)

//go:wasmimport atelier:host/kv@0.1.0 batch
func kvBatch(ops, n uint32, ret uint32)

// kvErr lifts the `error` variant at ptr (tag@0, string@4) when the result tag at ret is err.
func kvErr(ret uint32) error {
	if cabi.Load8(ret) == 0 {
		return nil
	}
	p := ret + 4
	return &KVError{Kind: KVErrorKind(cabi.Load8(p)), Message: cabi.TakeString(cabi.Load32(p+4), cabi.Load32(p+8))}
}

// Get returns the value stored under key and whether it exists (`atelier:host/kv.get`).
func Get(key string) ([]byte, bool, error) {
	ret := cabi.Ret()
	kvGet(key, ret) // result<option<list<u8>>, error>: tag@0, option tag@4, list@8
	if err := kvErr(ret); err != nil {
		return nil, false, err
	}
	if cabi.Load8(ret+4) == 0 {
		return nil, false, nil
	}
	return cabi.TakeBytes(cabi.Load32(ret+8), cabi.Load32(ret+12)), true, nil
}

// Set stores value under key (`atelier:host/kv.set`).
func Set(key string, value []byte) error {
	ret := cabi.Ret()
	kvSet(key, unsafe.Pointer(unsafe.SliceData(value)), uint32(len(value)), ret)
	return kvErr(ret)
}

// Delete removes key; a missing key is not an error (`atelier:host/kv.delete`).
func Delete(key string) error {
	ret := cabi.Ret()
	kvDelete(key, ret)
	return kvErr(ret)
}

// List returns up to limit entries whose keys start with prefix, in key order
// (`atelier:host/kv.list`).
func List(prefix string, limit uint32) ([]Entry, error) {
	ret := cabi.Ret()
	kvList(prefix, limit, ret) // result<list<entry>, error>: tag@0, list@4
	if err := kvErr(ret); err != nil {
		return nil, err
	}
	base, n := cabi.Load32(ret+4), cabi.Load32(ret+8)
	entries := make([]Entry, n)
	for i := range entries {
		e := base + uint32(i)*16 // entry: key@0, value@8
		entries[i] = Entry{
			Key:   cabi.TakeString(cabi.Load32(e), cabi.Load32(e+4)),
			Value: cabi.TakeBytes(cabi.Load32(e+8), cabi.Load32(e+12)),
		}
	}
	cabi.Free(base)
	return entries, nil
}

// Batch applies all ops or none (`atelier:host/kv.batch`).
func Batch(ops []Op) error {
	// op: tag@0, payload@4 (set: entry key@4 value@12; delete: key@4); 20 bytes each.
	base := cabi.Alloc(uint32(len(ops)) * 20)
	defer cabi.Free(base)
	var copies []uint32
	defer func() {
		for _, p := range copies {
			cabi.Free(p)
		}
	}()
	for i, op := range ops {
		o := base + uint32(i)*20
		kp, kn := cabi.CopyString(op.Key)
		copies = append(copies, kp)
		cabi.Store32(o+4, kp)
		cabi.Store32(o+8, kn)
		if op.Delete {
			cabi.Store8(o, 1)
			continue
		}
		vp, vn := cabi.CopyString(string(op.Value))
		copies = append(copies, vp)
		cabi.Store32(o+12, vp)
		cabi.Store32(o+16, vn)
	}
	ret := cabi.Ret()
	kvBatch(base, uint32(len(ops)), ret)
	return kvErr(ret)
}
