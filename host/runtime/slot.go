package runtime

import (
	"context"
	"sync"
)

// Slot holds at most one live instance of a component and replaces it when it retires: the
// call that retires an instance returns its *TrapError, and the next call runs on a fresh
// instance. The instance is created on the first call. Safe for concurrent use; calls run one
// at a time.
type Slot struct {
	rt   *Runtime
	comp *Component
	cfg  InstanceConfig

	mu     sync.Mutex // guards inst and closed, not the calls themselves
	inst   *Instance
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
	return inst, nil
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
