package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// InstanceConfig configures one instance.
type InstanceConfig struct {
	// Name identifies the instance in console lines and to host functions (a gadget ID, say).
	Name string
	// Grants are the unversioned interface names the instance may import, for example
	// "atelier:host/kv" or "wasi:cli/stdout" (see WASIBaseline). Anything else is refused.
	Grants []string
	// Limits bound each call and the instance's memory.
	Limits Limits
	// Console receives the guest's stdout and stderr, split into lines, and atelier:host/log
	// lines. It runs on the calling goroutine and must not block; nil drops the output.
	Console func(ConsoleLine)
	// Bind hands per-instance values to capabilities, keyed by grant ("atelier:host/kv" ->
	// the gadget's store); see HostInterface.NewState.
	Bind map[string]any
	// Account, when set, shares memory out between this instance and others (a workspace's
	// or the host's quota): see MemoryAccount. Nil gives the instance Limits.MaxMemory.
	Account MemoryAccount
}

// MemoryAccount decides how much of its budget (Limits.MaxMemory, lowered by
// Limits.MaxLiftBytes for a call whose result holds lists) an instance may hold, call by call,
// and learns what it holds. The Instance calls it with its lock held, on the calling
// goroutine: Acquire before the instantiation and before each call and resource drop, and
// Release after each of them and once more, with 0, when the instance is released. A Slot
// reuses its InstanceConfig, so one account serves its successive instances (one at a time).
type MemoryAccount interface {
	// Acquire gets the bytes the instance holds now (its tables' reserve and its memories),
	// its budget for the call, and the called function's lift factor (wit.LiftFactor of its
	// result; 0 for instantiation, resource drops and results without lists), and
	// returns the bytes it may hold until the matching Release, at most the budget; a growth
	// past them is refused as past the budget (ErrMemory). While the call's result is lifted,
	// Wasmtime may allocate up to liftFactor times those bytes besides: an account sharing
	// the host's memory counts them for the call's duration. An error refuses the call before
	// anything runs, and is returned by it.
	Acquire(held, budget, liftFactor int64) (int64, error)
	// Release gets the bytes the instance holds after the call (0 once released).
	Release(held int64)
}

// Limits bound what a guest may use. Zero fields take their defaults.
type Limits struct {
	// Timeout is the wall-clock limit of one call (and of instantiation), default
	// DefaultTimeout; a shorter context deadline wins. Resolution is Config.EpochTick.
	Timeout time.Duration
	// MaxMemory is the instance's memory budget in bytes (default DefaultMaxMemory): all its
	// linear memories and its tables together stay within it. Its tables get a sixteenth
	// (their number and elements are bounded to fit; see RATIONALE.md, "Memory budget"), its
	// memories the rest. A call that fails after the budget refused it memory returns
	// ErrMemory (see the package documentation). With Config.MemoryImages or Config.Pooling,
	// Wasmtime makes the memories and bounds each one alone by MaxMemory.
	MaxMemory int64
	// Fuel is the fuel each call may burn (0 = unlimited); needs Config.Fuel.
	Fuel uint64
	// MaxResult bounds the estimated size of a call's result once encoded as JSON (see
	// wit.Overhead), default DefaultMaxResult: a larger result is refused while it is lifted,
	// before most of it is copied into Go memory, with a *TrapError of kind
	// ErrResultTooLarge, and retires the instance.
	MaxResult int64
	// MaxLiftBytes bounds what Wasmtime's C API may allocate while it lifts a call's result,
	// default DefaultMaxLiftBytes. Wasmtime copies the whole result into its own values before
	// the host sees it (MaxResult comes after), up to wit.LiftFactor of the result type times
	// the bytes of the instance's linear memories (80 for list<bool>): during a call to such
	// a function they may hold at most MaxLiftBytes divided by the factor (the tables'
	// reserve comes on top), and an instance whose memories already hold more is refused the
	// call up front with a *LiftBoundError (ErrLiftBound; the instance lives on). Like MaxMemory, it needs the runtime's own memory budget (not
	// Config.MemoryImages or Config.Pooling).
	MaxLiftBytes int64
}

// Instance is a live component instance. Calls are serialised by a mutex (a Wasmtime store is
// single-threaded), so an Instance may be shared between goroutines.
//
// A call that traps, runs past its deadline, exhausts its fuel or its memory budget retires the
// instance: that call returns a *TrapError, later calls return ErrRetired, and the caller makes
// a new instance (Slot does this automatically).
type Instance struct {
	rt   *Runtime
	comp *Component
	cfg  InstanceConfig

	mu      sync.Mutex // guards everything below, and the store
	store   *capi.Store
	inst    *capi.Instance
	funcs   map[string]*boundFunc // by the name callers use
	last    *boundFunc            // the function of the latest call
	states  map[string]any
	res     resourceTable // host-defined resources
	outputs []*lineWriter
	retired error
	closed  bool

	// Set only while a call (or instantiation) runs.
	callCtx context.Context
	// hostCtx is callCtx bounded by the call's deadline, which host functions get: made at
	// the call's first host function (most calls make none); its timer only when a host
	// function waits on it (deadlineCtx).
	hostCtx    context.Context
	hostCancel context.CancelFunc
	deadline   int64 // Unix nanoseconds
	timedOut   bool
	hostErr    error
	// vals carries the values of the call (arguments, then result); host function calls
	// use the store's own.
	vals wit.Flat
	// armed is the Runtime.epoch value at which the store's epoch deadline next fires.
	armed uint64
	// memUsed is what the store's budget was charged at the end of the latest call (0 once
	// released), for MemoryUsed.
	memUsed atomic.Int64
}

// Instantiate checks the component's imports against cfg.Grants and creates an instance.
// A refused import is reported before anything runs, as *UngrantedImportError or
// *UnprovidedImportError (joined when there are several).
func (rt *Runtime) Instantiate(ctx context.Context, comp *Component, cfg InstanceConfig) (*Instance, error) {
	if err := comp.Audit().Check(rt, cfg.Grants); err != nil {
		return nil, fmt.Errorf("instantiate %s: %w", cfg.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	linker, err := rt.linker(comp)
	if err != nil {
		return nil, fmt.Errorf("instantiate %s: %w", cfg.Name, err)
	}
	cfg.Limits = cfg.Limits.withDefaults()
	in := &Instance{rt: rt, comp: comp, cfg: cfg, funcs: make(map[string]*boundFunc), states: make(map[string]any)}
	stdout, stderr := &lineWriter{inst: in, stream: "stdout"}, &lineWriter{inst: in, stream: "stderr"}
	in.outputs = []*lineWriter{stdout, stderr}
	in.store, err = capi.NewStore(rt.eng, capi.StoreConfig{
		MemoryLimit: cfg.Limits.MaxMemory,
		Stdout:      stdout,
		Stderr:      stderr,
		OnDeadline:  in.beforeDeadline,
		Owner:       in,
	})
	if err != nil {
		return nil, fmt.Errorf("instantiate %s: %w", cfg.Name, err)
	}
	for _, iface := range comp.hostIfaces {
		hi := rt.ifaces[iface]
		if hi.NewState == nil {
			continue
		}
		st, err := hi.NewState(InstanceInfo{Name: cfg.Name, Bind: cfg.Bind[iface]})
		if err != nil {
			in.release()
			return nil, fmt.Errorf("instantiate %s: state for %s: %w", cfg.Name, iface, err)
		}
		in.states[iface] = st
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.begin(ctx, nil); err != nil {
		in.release()
		return nil, err
	}
	in.inst, err = linker.Instantiate(in.store, comp.c)
	if err != nil {
		var ce *capi.Error
		if !errors.As(err, &ce) {
			ce = &capi.Error{Message: err.Error()}
		}
		terr := in.classify("", ce)
		in.end()
		in.release()
		return nil, fmt.Errorf("instantiate %s: %w", cfg.Name, terr)
	}
	in.end()
	return in, nil
}

// TableReserve returns the part of a memory budget (Limits.MaxMemory) that an instance's
// tables may hold and are charged from the start, a sixteenth: the instance may create at most
// 16 tables of at most TableReserve(budget)/128 elements each (8 bytes an element). Its
// linear memories together get the rest.
func TableReserve(budget int64) int64 { return capi.TableReserve(budget) }

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.MaxResult <= 0 {
		l.MaxResult = DefaultMaxResult
	}
	if l.MaxLiftBytes <= 0 {
		l.MaxLiftBytes = DefaultMaxLiftBytes
	}
	return l
}

// Call calls the exported function `name` — a top-level export ("add") or a function of an
// exported interface ("atelier:gadget/api#hello", with or without the interface's version) —
// with JSON-ish arguments, and returns its JSON-ish result (nil when it has none).
//
// When the function returns a WIT `result`, Call returns the ok payload, or a *ResultError
// holding the err payload. Arguments that do not fit the signature return a *wit.ValueError
// without calling the guest, and a resource handle the instance does not hold returns
// ErrUnknownHandle, also without calling it. A handle passed as an own<R> argument moves into
// the guest. Guest failures return a *TrapError and retire the instance.
func (in *Instance) Call(ctx context.Context, name string, args ...any) (any, error) {
	in.mu.Lock()
	defer in.mu.Unlock() // the only defer and a single return keep the defer open-coded (cheap)
	res, err := in.callLocked(ctx, name, args)
	in.vals.Reset() // no references to the caller's or the guest's values outlive the call
	return res, err
}

func (in *Instance) callLocked(ctx context.Context, name string, args []any) (any, error) {
	if err := in.usable(); err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	b, err := in.funcLocked(name)
	if err != nil {
		return nil, err
	}
	f, ft := b.f, b.ft
	if len(args) != len(ft.Params) {
		return nil, fmt.Errorf("call %s: got %d arguments, want %d: %s", name, len(args), len(ft.Params), ft)
	}
	for i, a := range args {
		if err := wit.LowerArg(ft.Params[i].Type, a, i, &in.vals); err != nil {
			return nil, fmt.Errorf("call %s: %w", name, err)
		}
	}
	if err := in.begin(ctx, b); err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	// The arguments are consumed before the result is appended: one Flat serves both.
	err = f.Call(ft, &in.vals, &in.vals, in.cfg.Limits.MaxResult)
	if err != nil {
		var ce *capi.Error
		var se *wit.SizeError
		switch {
		case errors.As(err, &ce):
			te := in.classify(name, ce)
			if te.Kind == ErrMemory && b.lift > 0 { // say when the lift bound lowered the budget
				if room := in.liftRoom(b); TableReserve(in.cfg.Limits.MaxMemory)+room < in.cfg.Limits.MaxMemory {
					te.Message += fmt.Sprintf("; a call returning %s may hold at most %s in its memories (Limits.MaxLiftBytes / %d, what Wasmtime may cost lifting the result): return less per call",
						b.ft.Result, wit.FormatSize(room), b.lift)
				}
			}
			in.retired = te
		case errors.As(err, &se):
			in.retired = &TrapError{Kind: ErrResultTooLarge, Func: name, Message: se.Error(), Host: se}
		default:
			in.end()
			return nil, fmt.Errorf("call %s: %w", name, err) // a conversion bug, not the guest's
		}
		in.end()
		in.release()
		return nil, in.retired
	}
	in.end()
	if ft.Result == nil {
		return nil, nil
	}
	out, isErr, err := wit.LiftReturn(ft.Result, &in.vals)
	switch {
	case err != nil:
		return nil, fmt.Errorf("call %s: %w", name, err)
	case isErr:
		return nil, &ResultError{Value: out}
	}
	return out, nil
}

// boundFunc is an exported function of this instance, looked up once.
type boundFunc struct {
	name string
	f    capi.Func
	ft   *wit.FuncType
	lift int64 // wit.LiftFactor(ft.Result)
}

// funcLocked returns the exported function called name. The last one used is checked first:
// callers tend to call one function many times, and comparing the name is cheaper than
// hashing it.
func (in *Instance) funcLocked(name string) (*boundFunc, error) {
	if b := in.last; b != nil && b.name == name {
		return b, nil
	}
	if b, ok := in.funcs[name]; ok {
		in.last = b
		return b, nil
	}
	e, idx, err := in.comp.export(name)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	f, ok := in.inst.Func(idx)
	if !ok {
		return nil, fmt.Errorf("call %s: %w", name, ErrNoExport)
	}
	in.last = &boundFunc{name: name, f: f, ft: e.ft, lift: e.lift}
	in.funcs[name] = in.last
	return in.last, nil
}

// begin arms the deadline, fuel and memory budget for one call of fn (nil: instantiation or
// a resource drop).
func (in *Instance) begin(ctx context.Context, fn *boundFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	in.callCtx = ctx
	// The call's start is taken from the last epoch tick rather than the clock: the deadline
	// can be up to one tick early, which is the deadline's resolution anyway.
	start := in.rt.lastTick.Load()
	in.deadline = start + int64(in.cfg.Limits.Timeout)
	if in.deadline < start { // a timeout of centuries
		in.deadline = math.MaxInt64
	}
	if d, ok := ctx.Deadline(); ok {
		in.deadline = min(in.deadline, d.UnixNano())
	}
	in.timedOut, in.hostErr = false, nil
	in.store.ClearMemoryRefused() // a refusal counts for the call it happened in
	// Re-arm the epoch deadline only when it is not already due within the next tick (the call's
	// entry into Wasmtime sets it, in the same cgo crossing); the deadline callback
	// (beforeDeadline) decides against the real clock either way.
	if epoch := in.rt.epoch.Load(); in.armed <= epoch {
		in.store.SetEpochDeadline(1)
		in.armed = epoch + 1
	}
	if in.rt.cfg.Fuel {
		fuel := in.cfg.Limits.Fuel
		if fuel == 0 {
			fuel = math.MaxUint64
		}
		if err := in.store.SetFuel(fuel); err != nil {
			return fmt.Errorf("set fuel: %w", err)
		}
	}
	// Last: a refusal here leaves nothing to undo.
	budget, lift, held := in.cfg.Limits.MaxMemory, int64(0), in.store.MemoryUsed()
	if fn != nil && fn.lift > 0 { // the result lies in the linear memories: the tables' reserve aside
		lift = fn.lift
		reserve, room := TableReserve(budget), in.liftRoom(fn)
		if held-reserve > room {
			return &LiftBoundError{Result: fn.ft.Result.String(), Factor: lift, Held: held - reserve, Bound: in.cfg.Limits.MaxLiftBytes}
		}
		budget = min(budget, reserve+room)
	}
	if acc := in.cfg.Account; acc != nil {
		allow, err := acc.Acquire(held, budget, lift)
		if err != nil {
			return err
		}
		budget = min(allow, budget)
	}
	in.store.SetMemoryBudget(budget)
	return nil
}

// liftRoom returns what the memories of an instance calling fn, whose result holds lists
// (fn.lift > 0), may hold under Limits.MaxLiftBytes.
func (in *Instance) liftRoom(fn *boundFunc) int64 { return in.cfg.Limits.MaxLiftBytes / fn.lift }

// end undoes begin, and tells the account what the instance holds now.
func (in *Instance) end() {
	if in.hostCancel != nil {
		in.hostCancel()
	}
	in.callCtx, in.hostCtx, in.hostCancel = nil, nil, nil
	if in.store != nil {
		in.held(in.store.MemoryUsed())
	}
}

// held records what the store's budget is charged (MemoryUsed) and tells the account.
func (in *Instance) held(n int64) {
	in.memUsed.Store(n)
	if in.cfg.Account != nil {
		in.cfg.Account.Release(n)
	}
}

// MemoryUsed returns the bytes the instance's memory budget was charged at the end of its
// latest call (or instantiation): its tables' reserve plus the committed bytes of all its
// linear memories; 0 once it is released, and with Config.MemoryImages or Config.Pooling
// (Wasmtime's memories are not counted). It never waits for a call in progress.
func (in *Instance) MemoryUsed() int64 { return in.memUsed.Load() }

// beforeDeadline runs at each epoch tick while the guest runs: keep going until the deadline
// or the context's cancellation.
func (in *Instance) beforeDeadline() bool {
	if in.callCtx != nil && in.callCtx.Err() != nil || in.rt.cfg.Now().UnixNano() >= in.deadline {
		in.timedOut = true
		return false
	}
	in.armed = in.rt.epoch.Load() + 1
	return true
}

// classify turns a Wasmtime error into a *TrapError of the right kind. A deadline or fuel
// stop wins over a memory refusal earlier in the call (it is what ended the call); a failure
// in a call (or instantiation) during which the budget refused memory is ErrMemory, whatever the
// guest did after being refused (trap, abort, exit).
func (in *Instance) classify(name string, ce *capi.Error) *TrapError {
	te := &TrapError{Kind: ErrTrap, Func: name, Message: firstLine(ce.Message), Backtrace: ce.Frames, Host: in.hostErr}
	if ce.Exited {
		te.Message = fmt.Sprintf("guest exited with status %d", ce.ExitCode)
	}
	switch {
	case in.timedOut:
		te.Kind, te.Message = ErrDeadline, ""
		if cerr := in.callCtxErr(); cerr != nil {
			te.Host = cerr
		}
	case in.rt.cfg.Fuel && in.fuelLeft() == 0:
		te.Kind, te.Message = ErrFuel, ""
	case in.store.MemoryRefused():
		te.Kind = ErrMemory
		if refusal := in.store.MemoryRefusal(); !strings.Contains(te.Message, refusal) {
			te.Message = refusal + "; then: " + te.Message // a refused grow is -1 to the guest
		}
	case name == "" && strings.Contains(ce.Message, "exceeds table limits"):
		// The store limiter refuses a table past the tables' share of the budget (TableReserve)
		// with this message.
		te.Kind = ErrMemory
	case !in.rt.cfg.memoryCreator() && name == "" && strings.Contains(ce.Message, "exceeds memory limits"):
		// Without the memory creator, Wasmtime's store limiter refuses a memory whose minimum
		// is above the cap with this message (and refuses growth silently).
		te.Kind = ErrMemory
	}
	return te
}

func (in *Instance) callCtxErr() error {
	if in.callCtx == nil {
		return nil
	}
	return in.callCtx.Err()
}

func (in *Instance) fuelLeft() uint64 {
	f, err := in.store.Fuel()
	if err != nil {
		return 1
	}
	return f
}

// firstLine keeps the cause of a Wasmtime message and drops the backtrace text that follows
// (the frames are in TrapError.Backtrace).
func firstLine(msg string) string {
	if i := strings.LastIndex(msg, "Caused by:"); i >= 0 {
		msg = strings.TrimSpace(msg[i+len("Caused by:"):])
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}

// Retired returns the error that retired the instance, or nil while it is usable.
func (in *Instance) Retired() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.retired
}

// DropResource drops a resource the instance returned (an own<R> handle): the guest's
// destructor runs, under the same deadline rules as a call, and the handle becomes unknown.
// An unknown handle (never returned by this instance, already dropped, or moved into the guest
// by passing it as an own<R> argument) is an error that leaves the instance as it was; a
// destructor that fails retires the instance with a *TrapError.
func (in *Instance) DropResource(ctx context.Context, h wit.Handle) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.usable(); err != nil {
		return fmt.Errorf("drop resource %d: %w", h, err)
	}
	if err := in.begin(ctx, nil); err != nil {
		return fmt.Errorf("drop resource %d: %w", h, err)
	}
	err := in.store.DropResource(h)
	var ce *capi.Error
	if errors.As(err, &ce) {
		in.retired = in.classify(fmt.Sprintf("drop resource %d", h), ce)
		err = in.retired
		in.release()
	} else if err != nil {
		err = fmt.Errorf("drop resource: %w", err)
	}
	in.end()
	return err
}

// Trim gives the kernel back, for good, the resident pages of the instance's linear memories
// that the guest would read the same from fresh memory: pages holding only zeros and pages of
// its component's memory image that it only read (which other instances map too, but which
// VmRSS counts once per instance). It returns the bytes given back. The guest cannot tell,
// and its state is untouched; a later call that touches such a page faults it in again (a
// minor fault), so it is meant for an idle instance, not between busy calls. It waits for a
// call in flight; a closed or retired instance has nothing to trim. Without the runtime's
// memory creator (Config.MemoryImages, Config.Pooling) it does nothing.
func (in *Instance) Trim() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.usable() != nil {
		return 0
	}
	return in.store.Trim()
}

// usable returns why the instance cannot run anything, or nil.
func (in *Instance) usable() error {
	switch {
	case in.closed:
		return ErrClosed
	case in.retired != nil:
		return fmt.Errorf("%w (%w)", ErrRetired, in.retired)
	}
	return nil
}

// Close releases the instance. Idempotent.
func (in *Instance) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	in.closed = true
	if in.retired == nil {
		in.release()
	}
	return nil
}

// release frees the store, flushes the console, drops the host resources still live and
// closes capability states.
func (in *Instance) release() {
	if in.store == nil {
		return
	}
	in.store.Close()
	in.store, in.inst, in.funcs, in.last = nil, nil, nil, nil
	in.held(0)
	for _, w := range in.outputs {
		w.flush()
	}
	in.endResources()
	for _, st := range in.states {
		if c, ok := st.(io.Closer); ok {
			_ = c.Close()
		}
	}
	in.states = nil
}
