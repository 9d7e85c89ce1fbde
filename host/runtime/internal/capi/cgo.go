// Package capi is the only cgo package of Atelier: a thin mirror of the parts of Wasmtime's
// component-model C API that host/runtime needs. It owns every C object it creates; each one
// has exactly one Go owner whose Close (or Delete) releases it, idempotently.
//
// # Linking
//
// The static libwasmtime.a ships inside github.com/bytecodealliance/wasmtime-go/v39; importing
// that package (blank) brings its `#cgo LDFLAGS` into the final link. cgo cannot name another
// module's directory, so include/ holds a copy of the module's build/include/**/*.h for the
// same version (refresh it with host/runtime/internal/capi/include/UPDATE.md when the module is
// upgraded).
//
// # Rules
//
//   - No C type appears in an exported signature; values cross as the canonical Go forms of
//     package wit, guided by wit.Type.
//   - Go pointers are never stored in C memory; callbacks carry handles (handles.go) and every
//     //export trampoline lives in callbacks.go.
//   - A Store and everything in it (instances, functions, resources) is used by one goroutine at
//     a time; the caller serialises access. Engine, Component and Linker are safe to share.
//   - The arguments of an exported function are lent to Wasmtime, which only reads them: they
//     are built in the store's reusable C arena (arena.go) and never reach Wasmtime's
//     allocator. Values Wasmtime takes (host function results) or returns are its own.
//   - C errors become *Error values where they arrive, and the C error is freed there.
//   - Go code called from C (host functions, output writers, epoch callbacks) never lets a panic
//     unwind into C: it is recovered and turned into a Wasmtime error.
package capi

// #cgo CFLAGS: -I${SRCDIR}/include
// #include "shim.h"
import "C"

import (
	// Imported for its cgo LDFLAGS only: they link the module's static libwasmtime.a.
	_ "github.com/bytecodealliance/wasmtime-go/v39"
)

// Version is the Wasmtime version of the linked library (from its headers).
const Version = C.WASMTIME_VERSION
