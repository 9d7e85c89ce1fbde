package runtime

import (
	"atelier/host/runtime/wit"
	"context"
	"fmt"
	"sync"
)

// Slot holds at most one live instance of a component and replaces it when it retires: the
// call that retires an instance returns its *TrapError, and the next call runs on a fresh
// instance. The instance is created on the first call. Safe for concurrent use; calls run one
// at a time.
//
// Instances are numbered (Gen): a resource handle a call returned belongs to the instance that
// was live then, and is usable only while Current says that instance still is.
type Slot struct {
	rt   *Runtime
	comp *Component
	cfg  InstanceConfig

	mu     sync.Mutex // guards inst, gen and closed, not the calls themselves
	inst   *Instance
	gen    uint64 // the number of inst: 1 for the first instance, 0 before any
	closed bool
}

// NewSlot returns a slot for comp; nothing is instantiated yet.
func (rt *Runtime) NewSlot(comp *Component, cfg InstanceConfig) *Slot {
	return &Slot{rt: rt, comp: comp, cfg: cfg}
}

// Call calls the function on the live instance, instantiating one first when needed.
func (s *Slot) Call(ctx context.Context, name string, args ...any) (any, error) {
	inst, err := s.instance(ctx)
	if err != nil {
		return nil, err
	}
	return inst.Call(ctx, name, args...)
}

// instance returns the live instance, creating it when there is none or the last one retired.
func (s *Slot) instance(ctx context.Context) (*Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.inst != nil && s.inst.Retired() == nil {
		return s.inst, nil
	}
	if s.inst != nil {
		_ = s.inst.Close()
		s.inst = nil
	}
	inst, err := s.rt.Instantiate(ctx, s.comp, s.cfg)
	if err != nil {
		return nil, err
	}
	s.inst = inst
	s.gen++
	return inst, nil
}

// Gen returns the number of the live (or last) instance: 1 for the first, one more for each
// replacement; 0 before the first call.
func (s *Slot) Gen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Current reports whether instance gen is the live one and has not retired.
func (s *Slot) Current(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inst != nil && gen == s.gen && s.inst.Retired() == nil
}

// DropResource drops resource h of instance gen (Instance.DropResource), which must be the
// live one: a handle of an instance that was replaced is refused with ErrRetired.
func (s *Slot) DropResource(ctx context.Context, gen uint64, h wit.Handle) error {
	s.mu.Lock()
	inst := s.inst
	if inst == nil || gen != s.gen {
		s.mu.Unlock()
		return fmt.Errorf("drop resource: %w", ErrRetired)
	}
	s.mu.Unlock()
	return inst.DropResource(ctx, h)
}

// Trim trims the live instance, if any (Instance.Trim), and returns the bytes given back.
func (s *Slot) Trim() int64 {
	s.mu.Lock()
	inst := s.inst
	s.mu.Unlock()
	if inst == nil {
		return 0
	}
	return inst.Trim()
}

// Close closes the live instance, if any. Idempotent.
func (s *Slot) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.inst == nil {
		return nil
	}
	err := s.inst.Close()
	s.inst = nil
	return err
}
