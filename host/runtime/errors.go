package runtime

import (
	"errors"
	"fmt"
	"strings"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// Sentinel errors. Match them with errors.Is: the typed errors below wrap them.
var (
	// ErrTrap: the guest trapped (unreachable, out-of-bounds access, stack overflow, a host
	// function that failed, wasi exit...). The instance is retired.
	ErrTrap = errors.New("guest trapped")
	// ErrDeadline: the call ran past its deadline (Limits.Timeout or the context's) and was
	// interrupted. The instance is retired.
	ErrDeadline = errors.New("guest ran past its deadline")
	// ErrMemory: the memory budget (Limits.MaxMemory) refused the instance memory at
	// instantiation, or refused a memory.grow during a call that then failed (see the package
	// documentation for the exact rule and the Pooling/MemoryImages limit). The instance is
	// retired (or was never created).
	ErrMemory = errors.New("guest exceeded its memory budget")
	// ErrFuel: the call used up its fuel (Limits.Fuel). The instance is retired.
	ErrFuel = errors.New("guest ran out of fuel")
	// ErrResultTooLarge: the call's result would be larger than Limits.MaxResult once encoded,
	// and was refused before it was built (TrapError.Host is the *wit.SizeError). The
	// instance is retired, as after a trap, so that callers treat the call as failed
	// throughout (the kernel discards its writes and starts a fresh instance).
	ErrResultTooLarge = errors.New("result too large")
	// ErrLiftBound: the called function's result may cost the host more than
	// Limits.MaxLiftBytes while Wasmtime lifts it, given the memory the instance already holds
	// (see *LiftBoundError). The call is refused before the guest runs; the instance lives on.
	ErrLiftBound = errors.New("result may cost the host too much to lift")
	// ErrRetired: the instance was retired by an earlier failure; instantiate again (or use a
	// Slot, which does it for you).
	ErrRetired = errors.New("instance retired")
	// ErrClosed: the instance, slot or runtime was closed.
	ErrClosed = errors.New("closed")
	// ErrNoExport: the component exports no function of that name.
	ErrNoExport = errors.New("no such exported function")
	// ErrUnknownHandle: a resource handle that the instance does not hold: never returned by
	// it (handles of other instances included), already dropped, or moved into the guest as
	// an own<R> argument. The call is refused before the guest runs; the instance lives on.
	ErrUnknownHandle = capi.ErrUnknownHandle
)

// LiftBoundError refuses a call up front: Wasmtime's C API may allocate up to Factor
// (wit.LiftFactor of the result type Result) times the instance's linear memories while it
// lifts the result, and they already hold Held bytes, more than Bound (Limits.MaxLiftBytes)
// divided by Factor.
type LiftBoundError struct {
	Result      string
	Factor      int64
	Held, Bound int64
}

// Error says what the result may cost and what the caller can do.
func (e *LiftBoundError) Error() string {
	return fmt.Sprintf("its result type %s may cost the host up to %d × its memory while Wasmtime lifts it; the instance holds %s, over the lift bound of %s (%s / %d); return less per call",
		e.Result, e.Factor, wit.FormatSize(e.Held), wit.FormatSize(e.Bound/e.Factor), wit.FormatSize(e.Bound), e.Factor)
}

// Unwrap returns ErrLiftBound.
func (e *LiftBoundError) Unwrap() error { return ErrLiftBound }

// TrapError reports a call that ended the instance. Kind is one of ErrTrap, ErrDeadline,
// ErrMemory, ErrFuel or ErrResultTooLarge and is what errors.Is matches; Host is the error a
// host function returned when that caused the trap (or the *wit.SizeError that refused a
// result).
type TrapError struct {
	Kind      error
	Func      string
	Message   string
	Backtrace []Frame
	Host      error
}

// Frame is one guest stack frame of a trap backtrace, innermost first.
type Frame = capi.Frame

// Error returns a one-line summary; Backtrace holds the frames.
func (e *TrapError) Error() string {
	var b strings.Builder
	if e.Func != "" {
		b.WriteString("call ")
		b.WriteString(e.Func)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.Error())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap exposes Kind and, when set, the host function's error.
func (e *TrapError) Unwrap() []error {
	if e.Host != nil {
		return []error{e.Kind, e.Host}
	}
	return []error{e.Kind}
}

// UngrantedImportError refuses a component that imports an interface its grants do not cover.
type UngrantedImportError struct {
	// Import is the import's full name ("wasi:sockets/tcp@0.2.0").
	Import string
	// Grant is the grant that would allow it ("wasi:sockets/tcp").
	Grant string
}

// Error names the import and the grant.
func (e *UngrantedImportError) Error() string {
	return fmt.Sprintf("import %q is not granted (grant %q would allow it)", e.Import, e.Grant)
}

// UnprovidedImportError refuses a component that imports a granted interface that no host
// interface of the runtime (and no WASI interface) provides.
type UnprovidedImportError struct {
	Import string
}

// Error names the import.
func (e *UnprovidedImportError) Error() string {
	return fmt.Sprintf("import %q is granted but nothing in this host provides it", e.Import)
}

// ResultError is how a WIT `result` error crosses into Go: Instance.Call returns it when the
// guest function returns `err(v)`, and a host function returns it (see Fail) to make its WIT
// `result` an `err(v)`. Value is in the JSON-ish form.
type ResultError struct {
	Value any
}

// Fail returns a *ResultError carrying v, for host functions whose WIT result is a `result`.
func Fail(v any) error { return &ResultError{Value: v} }

// Error renders the value.
func (e *ResultError) Error() string { return fmt.Sprintf("guest returned error: %v", e.Value) }
