package kernel

import (
	"context"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// componentExec runs a component gadget's calls on a runtime.Slot (one live instance, replaced
// on the call after one retired) and counts the resources the live instance handed out, so
// that an instance holding some is not evicted as idle. It is used under the actor's turn only.
type componentExec struct {
	*runtime.Slot
	gen  uint64 // the instance live counts are for
	live int    // resources of instance gen handed out and not yet dropped or moved into the guest
}

// newComponentExec returns the exec of a component; nothing is instantiated yet.
func newComponentExec(rt *runtime.Runtime, comp *runtime.Component, cfg runtime.InstanceConfig) *componentExec {
	return &componentExec{Slot: rt.NewSlot(comp, cfg)}
}

// Call calls export fn (runtime.Slot.Call); a replaced instance's resources no longer count.
func (c *componentExec) Call(ctx context.Context, fn string, args ...any) (any, error) {
	res, err := c.Slot.Call(ctx, fn, args...)
	if gen := c.Gen(); gen != c.gen {
		c.gen, c.live = gen, 0
	}
	return res, err
}

// current returns nil when instance gen is live, else the error that says its resources are
// gone.
func (c *componentExec) current(gen uint64) error {
	if !c.Current(gen) {
		return errResourceRetired
	}
	return nil
}

// drop drops resource h of instance gen, running the guest's destructor; the caller checked
// with current that gen is live.
func (c *componentExec) drop(ctx context.Context, gen uint64, h wit.Handle) error {
	c.live--
	return c.DropResource(ctx, gen, h)
}

// pinned reports whether the live instance has resources handed out.
func (c *componentExec) pinned() bool { return c.live > 0 && c.Current(c.gen) }
