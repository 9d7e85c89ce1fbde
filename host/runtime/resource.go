package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// HostResource is a resource type that a HostInterface defines and guests import: the
// interface's `[constructor]R`, `[method]R.m` and `[static]R.f` functions are ordinary
// HostFuncs of the interface, which see own<R> and borrow<R> values as Resource and make new
// ones with HostCall.NewResource.
type HostResource struct {
	// Name is the resource's name in the interface ("handle").
	Name string
	// Drop, if set, releases a resource of this type. It runs exactly once per resource made
	// by HostCall.NewResource, when its last holder lets it go: the guest drops its own<R>
	// handle (an error or panic then traps the guest and retires its instance, like a host
	// function's), a host function calls HostCall.DropResource, or the instance ends (closed
	// or retired) with the resource still live (an error is then logged and ignored). r.Own is
	// true and r.Value is what NewResource got. Drop runs on the instance's goroutine, with the
	// interface's state in call, and must not call back into the instance.
	Drop func(ctx context.Context, call *HostCall, r Resource) error
}

// Resource is a host-defined resource as the functions of its HostInterface see it: what an
// own<R> or borrow<R> parameter holds, and what an own<R> result must be. Only
// HostCall.NewResource and the runtime make them, and each belongs to one instance: a Resource
// of another instance is refused. Its guest handles are checked by Wasmtime: a guest that
// passes a handle of another type, or one it dropped or gave away, traps.
type Resource struct {
	// Type is the resource's name in its interface (HostResource.Name).
	Type string
	// Rep is the resource's number in its instance, unique among the instance's live host
	// resources and never reused by it; the guest cannot see or forge it.
	Rep uint32
	// Own is set for an own<R> value: an own<R> parameter hands the resource to the host,
	// which gives it back to the guest by returning it as an own<R> result, or ends it with
	// HostCall.DropResource (else it lives until the instance ends). A borrow<R> parameter is
	// valid during the call only.
	Own bool
	// Value is what HostCall.NewResource got for the resource.
	Value any

	table *resourceTable // the instance's
}

// resourceType is one HostResource of a runtime's interface.
type resourceType struct {
	iface string // unversioned
	def   *HostResource
	id    uint32 // Wasmtime's host type, unique in the process
}

// resourceTypeIDs numbers host resource types across the process.
var resourceTypeIDs atomic.Uint32

// newResourceTypes numbers the resource types of the interfaces (after validation).
func newResourceTypes(ifaces []HostInterface) map[string]map[string]*resourceType {
	out := make(map[string]map[string]*resourceType)
	for i := range ifaces {
		hi := &ifaces[i]
		iface := wit.Unversioned(hi.Name)
		for j := range hi.Resources {
			if out[iface] == nil {
				out[iface] = make(map[string]*resourceType)
			}
			out[iface][hi.Resources[j].Name] = &resourceType{iface: iface, def: &hi.Resources[j], id: resourceTypeIDs.Add(1)}
		}
	}
	return out
}

// validateResources checks the resource types of interface i.
func (hi *HostInterface) validateResources(i int) []error {
	var errs []error
	seen := make(map[string]bool)
	for j, r := range hi.Resources {
		if r.Name == "" || seen[r.Name] {
			errs = append(errs, fmt.Errorf("Interfaces[%d].Resources[%d]: empty or duplicate resource %q", i, j, r.Name))
		}
		seen[r.Name] = true
	}
	return errs
}

// checkResources refuses, with an *UnprovidedImportError naming "interface#resource", each
// resource imported from a host interface that does not define it (Wasmtime would only say
// that the instance's type is wrong).
func (rt *Runtime) checkResources(imports []wit.Item) error {
	var errs []error
	for _, it := range imports {
		iface := it.Interface()
		if it.Kind != wit.ItemInstance || rt.ifaces[iface] == nil {
			continue // WASI, or refused by CheckGrants
		}
		for _, x := range it.Exports {
			if x.Kind == wit.ItemResource && rt.resources[iface][x.Name] == nil {
				errs = append(errs, &UnprovidedImportError{Import: it.Name + "#" + x.Name})
			}
		}
	}
	return errors.Join(errs...)
}

// capiResources returns the interface's resource types for the linker: the guest's drops reach
// the instance that dropped them.
func (rt *Runtime) capiResources(iface string) []capi.HostResource {
	types := rt.resources[iface]
	names := slices.Sorted(maps.Keys(types))
	out := make([]capi.HostResource, len(names))
	for i, name := range names {
		typ := types[name]
		out[i] = capi.HostResource{
			Name: name,
			Type: typ.id,
			Drop: func(s *capi.Store, rep uint32) error { return s.Owner().(*Instance).guestDropped(typ, rep) },
		}
	}
	return out
}

// resourceTable is an instance's table of live host-defined resources.
type resourceTable struct {
	last  uint32 // the latest representation handed out
	live  map[uint32]*liveResource
	ended bool // the instance ended: no new resources
}

type liveResource struct {
	typ   *resourceType
	value any
	// guest is set while an own<R> handle of the resource is outside the host: in the guest,
	// or with Instance.Call's caller as a wit.Handle. Otherwise the host holds it.
	guest bool
}

// NewResource makes a resource of the interface's type `name` holding value, owned by the host
// until a host function returns it as an own<R> result (a constructor, say). It fails for a
// name the interface does not define and once the instance is ending.
func (c *HostCall) NewResource(name string, value any) (Resource, error) {
	typ := c.inst.rt.resources[c.iface][name]
	tab := &c.inst.res
	switch {
	case typ == nil:
		return Resource{}, fmt.Errorf("new resource: interface %s defines no resource %q", c.iface, name)
	case tab.ended:
		return Resource{}, fmt.Errorf("new resource %s: instance %s: %w", name, c.inst.cfg.Name, ErrClosed)
	case tab.last == ^uint32(0):
		return Resource{}, fmt.Errorf("new resource %s: instance %s has used up its 2^32 resources", name, c.inst.cfg.Name)
	}
	tab.last++
	if tab.live == nil {
		tab.live = make(map[uint32]*liveResource)
	}
	tab.live[tab.last] = &liveResource{typ: typ, value: value}
	return Resource{Type: name, Rep: tab.last, Own: true, Value: value, table: tab}, nil
}

// DropResource ends a resource the host holds (one it made and has not handed out, or an
// own<R> parameter it was given) now: its HostResource.Drop runs and its error is returned.
// A resource of another instance, one already ended, or one whose own<R> handle the guest has
// is refused with ErrUnknownHandle.
func (c *HostCall) DropResource(r Resource) error {
	lr, err := c.inst.res.held(r)
	if err != nil {
		return fmt.Errorf("drop resource: %w", err)
	}
	if lr.guest {
		return fmt.Errorf("drop resource %s %d: the guest owns it: %w", r.Type, r.Rep, ErrUnknownHandle)
	}
	return c.inst.dropResource(c.inst.ctx(), lr, r.Rep)
}

// held returns the live entry of r, a resource of this table.
func (tab *resourceTable) held(r Resource) (*liveResource, error) {
	if r.table != tab {
		return nil, fmt.Errorf("resource %s %d belongs to another instance or was not made by HostCall.NewResource: %w", r.Type, r.Rep, ErrUnknownHandle)
	}
	lr, ok := tab.live[r.Rep]
	if !ok || lr.typ.def.Name != r.Type {
		return nil, fmt.Errorf("resource %s %d has ended: %w", r.Type, r.Rep, ErrUnknownHandle)
	}
	return lr, nil
}

// guestDropped runs when the guest (or Instance.DropResource) drops the own<R> handle of the
// resource rep of type typ.
func (in *Instance) guestDropped(typ *resourceType, rep uint32) error {
	lr, ok := in.res.live[rep]
	if !ok || lr.typ != typ || !lr.guest {
		return in.hostFailed(fmt.Errorf("drop resource %s %d: not held by the guest", typ.def.Name, rep))
	}
	if err := in.dropResource(in.ctx(), lr, rep); err != nil {
		return in.hostFailed(err)
	}
	return nil
}

// dropResource takes the live resource lr (number rep) out of the table and runs its Drop.
func (in *Instance) dropResource(ctx context.Context, lr *liveResource, rep uint32) (err error) {
	delete(in.res.live, rep)
	drop := lr.typ.def.Drop
	if drop == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drop resource %s %d: panic: %v", lr.typ.def.Name, rep, r)
		}
	}()
	call := &HostCall{inst: in, state: in.states[lr.typ.iface], iface: lr.typ.iface}
	if err := drop(ctx, call, Resource{Type: lr.typ.def.Name, Rep: rep, Own: true, Value: lr.value, table: &in.res}); err != nil {
		return fmt.Errorf("drop resource %s %d: %w", lr.typ.def.Name, rep, err)
	}
	return nil
}

// endResources drops every resource still live when the instance ends, in the order they were
// made. Errors are logged: the resources are gone either way.
func (in *Instance) endResources() {
	tab := &in.res
	tab.ended = true
	for _, rep := range slices.Sorted(maps.Keys(tab.live)) {
		lr, ok := tab.live[rep]
		if !ok {
			continue // an earlier Drop ended it (HostCall.DropResource)
		}
		if err := in.dropResource(context.Background(), lr, rep); err != nil {
			in.rt.log.Warn("host resource drop at instance end failed", "instance", in.cfg.Name, "err", err)
		}
	}
}

// ctx returns the context of the running call (Background during instantiation).
func (in *Instance) ctx() context.Context {
	if in.callCtx == nil {
		return context.Background()
	}
	if in.hostCtx == nil {
		if d, ok := in.callCtx.Deadline(); ok && d.UnixNano() <= in.deadline {
			in.hostCtx = in.callCtx // already bounded by the call's deadline (it set it)
		} else {
			in.hostCtx, in.hostCancel = newDeadlineCtx(in.callCtx, time.Unix(0, in.deadline))
		}
	}
	return in.hostCtx
}

// hostValues converts the host-defined resources in the values of the instance's host function
// calls (see wit.Resources).
type hostValues struct{ in *Instance }

// LiftResource turns a resource the guest passes to a host function into a Resource.
func (h hostValues) LiftResource(t *wit.Type, w uint64) (any, error) {
	ty, rep := capi.SplitHostResourceWord(w)
	lr, ok := h.in.res.live[rep]
	switch {
	case !ok || lr.typ.id != ty:
		return nil, fmt.Errorf("host resource %d (type %d) is not live in this instance", rep, ty)
	case t.Kind == wit.Own && !lr.guest:
		return nil, fmt.Errorf("resource %s %d: the guest passed an own<%s> it does not hold", lr.typ.def.Name, rep, lr.typ.def.Name)
	case t.Kind == wit.Own:
		lr.guest = false // the host holds it now
	}
	return Resource{Type: lr.typ.def.Name, Rep: rep, Own: t.Kind == wit.Own, Value: lr.value, table: &h.in.res}, nil
}

// LowerResource turns a Resource a host function returns into the word of an own<R>, which
// hands the resource to the guest.
func (h hostValues) LowerResource(t *wit.Type, v any) (uint64, error) {
	r, ok := v.(Resource)
	if !ok {
		return 0, fmt.Errorf("want %s (a runtime.Resource), got %T", handleType(t), v)
	}
	lr, err := h.in.res.held(r)
	switch {
	case err != nil:
		return 0, err
	case t.Kind != wit.Own:
		return 0, fmt.Errorf("a host function cannot return %s", handleType(t))
	case t.Resource != "" && t.Resource != r.Type:
		return 0, fmt.Errorf("resource %s %d where %s is expected", r.Type, r.Rep, handleType(t))
	case lr.guest:
		return 0, fmt.Errorf("resource %s %d: the guest already owns it (return it once, or make a new one)", r.Type, r.Rep)
	}
	lr.guest = true
	return capi.HostResourceWord(lr.typ.id, r.Rep), nil
}

// handleType renders an own<R> or borrow<R> type in full.
func handleType(t *wit.Type) string { return fmt.Sprintf("%s<%s>", t.Kind, t.Resource) }
