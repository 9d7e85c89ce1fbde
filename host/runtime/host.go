package runtime

import (
	"context"
	"errors"
	"fmt"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// HostInterface is one WIT interface implemented in Go: a capability. All of its functions are
// defined together (Wasmtime defines an interface once per linker), and only on the linkers of
// instances that were granted it.
type HostInterface struct {
	// Name is the full interface name with version, as guests import it
	// ("atelier:host/kv@0.1.0"). The grant for it is the name without the version.
	Name string
	// Funcs are the interface's functions, including the constructors, methods and static
	// functions of its resources ("[constructor]R", "[method]R.m", "[static]R.f").
	Funcs []HostFunc
	// Resources are the resource types the interface defines (see HostResource).
	Resources []HostResource
	// NewState, if set, creates the per-instance state that the interface's functions reach
	// through HostCall.State. It runs once per instance that imports the interface, with the
	// value InstanceConfig.Bind holds for the grant (or nil). A non-nil state implementing
	// io.Closer is closed with the instance.
	NewState func(info InstanceInfo) (any, error)
}

// HostFunc is one function of a HostInterface. Func gets the arguments in the JSON-ish form
// (see the package documentation) and returns the result in that form (nil for a function
// without result). For a WIT result `result<T, E>` it returns the ok payload, or an error made
// with Fail(e) for the err payload. Any other error traps the guest and retires its instance.
//
// Func runs on the goroutine that called the guest, while the instance is locked: it must not
// call back into the same instance.
type HostFunc struct {
	Name string
	Func func(ctx context.Context, call *HostCall, args []any) (any, error)
}

// InstanceInfo describes the instance a capability creates state for.
type InstanceInfo struct {
	// Name is InstanceConfig.Name.
	Name string
	// Bind is InstanceConfig.Bind[grant] (nil when absent).
	Bind any
}

// HostCall is what a host function knows about its caller.
type HostCall struct {
	inst  *Instance
	state any
	iface string // unversioned
}

// State returns the interface's per-instance state (see HostInterface.NewState).
func (c *HostCall) State() any { return c.state }

// InstanceName returns the calling instance's InstanceConfig.Name.
func (c *HostCall) InstanceName() string { return c.inst.cfg.Name }

// Console writes one line to the calling instance's console.
func (c *HostCall) Console(stream, level, text string) {
	c.inst.console(ConsoleLine{Stream: stream, Level: level, Text: text})
}

// define adds the interface, with resources (its resource types), to a linker.
func (hi *HostInterface) define(l *capi.Linker, resources []capi.HostResource) error {
	iface := wit.Unversioned(hi.Name)
	funcs := make([]capi.HostFunc, len(hi.Funcs))
	for i := range hi.Funcs {
		f := &hi.Funcs[i]
		key := iface + "#" + f.Name
		funcs[i] = capi.HostFunc{
			Name: f.Name,
			Signature: func(s *capi.Store) (*wit.FuncType, error) {
				inst := s.Owner().(*Instance)
				ft, ok := inst.comp.imports[key]
				if !ok {
					return nil, fmt.Errorf("component does not import %s", key)
				}
				return ft, nil
			},
			Call: func(s *capi.Store, ft *wit.FuncType, args, res *wit.Flat) error {
				return s.Owner().(*Instance).callHost(iface, key, f, ft, args, res)
			},
		}
	}
	if err := l.DefineInstance(hi.Name, resources, funcs); err != nil {
		return fmt.Errorf("define host interface %s: %w", hi.Name, err)
	}
	return nil
}

// callHost runs host function f, of type ft as the component imports it, for the instance (on
// the goroutine inside Instance.Call): it lifts the canonical arguments from args and lowers
// the result into res.
func (in *Instance) callHost(iface, key string, f *HostFunc, ft *wit.FuncType, args, res *wit.Flat) error {
	conv := wit.Converter{Resources: hostValues{in}}
	lifted := make([]any, len(ft.Params))
	for i, p := range ft.Params {
		x, err := conv.LiftArg(p.Type, args, i)
		if err != nil {
			return in.hostFailed(fmt.Errorf("host function %s: %w", key, err))
		}
		lifted[i] = x
	}
	ctx := in.ctx()
	out, err := safeCall(ctx, f, &HostCall{inst: in, state: in.states[iface], iface: iface}, lifted)
	cerr := ctx.Err()
	if cerr == nil && in.rt.cfg.Now().UnixNano() >= in.deadline {
		// An egress socket given the same deadline can time out a moment before ctx's own
		// timer marks it done: the call still ends as past its deadline.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil { // the guest would stop at its next deadline check anyway
		in.timedOut = true
		return in.hostFailed(fmt.Errorf("host function %s: the call's deadline passed while it ran: %w", key, cerr))
	}
	var fail *ResultError
	isErr := ft.Result != nil && ft.Result.Kind == wit.Result && errors.As(err, &fail)
	switch {
	case isErr:
		out = fail.Value
	case err != nil:
		return in.hostFailed(fmt.Errorf("host function %s: %w", key, err))
	case ft.Result == nil:
		return nil
	}
	if err := conv.LowerReturn(ft.Result, out, isErr, res); err != nil {
		return in.hostFailed(fmt.Errorf("host function %s: %w", key, err))
	}
	return nil
}

// hostFailed remembers why a host function trapped the guest, for the TrapError.
func (in *Instance) hostFailed(err error) error {
	in.hostErr = err
	return err
}

// safeCall runs a host function, turning a panic into an error (the guest traps, the host lives).
func safeCall(ctx context.Context, f *HostFunc, call *HostCall, args []any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f.Func(ctx, call, args)
}
