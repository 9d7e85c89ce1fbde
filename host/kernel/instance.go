package kernel

import (
	"context"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// componentExec holds a component gadget's one live instance and replaces it on the call
// after a call retired it (a trap, deadline or memory overrun). Unlike runtime.Slot it numbers
// its instances and counts the resources the live one handed out, so that a resource stub
// knows when the instance that made it is gone, and it drops resources. It is used under the
// actor's turn only.
type componentExec struct {
	rt   *runtime.Runtime
	comp *runtime.Component
	cfg  runtime.InstanceConfig

	inst *runtime.Instance
	gen  uint64 // which instance inst is: 1 for the first; 0 before any
	live int    // resources of inst handed out and not yet dropped or moved into the guest
}

// Call calls the export fn on the live instance, instantiating one first when there is none or
// the last one retired.
func (c *componentExec) Call(ctx context.Context, fn string, args ...any) (any, error) {
	if c.inst == nil || c.inst.Retired() != nil {
		if c.inst != nil {
			_ = c.inst.Close()
			c.inst = nil
		}
		inst, err := c.rt.Instantiate(ctx, c.comp, c.cfg)
		if err != nil {
			return nil, err
		}
		c.inst, c.live = inst, 0
		c.gen++
	}
	return c.inst.Call(ctx, fn, args...)
}

// current reports whether instance gen is the live one and has not retired; when it is not,
// the error says why its resources are gone.
func (c *componentExec) current(gen uint64) error {
	if c.inst == nil || gen != c.gen {
		return errResourceRetired
	}
	if err := c.inst.Retired(); err != nil {
		return errResourceRetired
	}
	return nil
}

// drop drops resource h, running the guest's destructor; the caller checked with current that
// h is the live instance's.
func (c *componentExec) drop(ctx context.Context, h wit.Handle) error {
	c.live--
	return c.inst.DropResource(ctx, h)
}

// pinned reports whether the live instance has resources handed out.
func (c *componentExec) pinned() bool {
	return c.live > 0 && c.inst != nil && c.inst.Retired() == nil
}

// Close closes the live instance, if any.
func (c *componentExec) Close() error {
	if c.inst == nil {
		return nil
	}
	err := c.inst.Close()
	c.inst = nil
	return err
}
