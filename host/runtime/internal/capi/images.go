package capi

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
	"unsafe"

	"atelier/host/runtime/internal/dataseg"
)

// MemoryPlan is the memory layout of a component's instantiations (dataseg.Layout) with its
// images in sealed memfds, for the memory creator (EngineConfig.CapMemories): each linear
// memory an instantiation creates must be the plan's next memory, with the same limits, and
// an imaged one starts as a private copy-on-write mapping of its image. It is immutable and
// may be shared by any number of components compiled from the same source.
type MemoryPlan struct {
	p      *C.atl_plan_t
	closed atomic.Bool
}

// NewMemoryPlan copies l's images into sealed memfds.
func NewMemoryPlan(l *dataseg.Layout) (*MemoryPlan, error) {
	p := C.atl_plan_new(C.size_t(len(l.Memories)), C.size_t(len(l.Images)))
	if p == nil {
		return nil, errors.New("memory plan: out of host memory")
	}
	mems := unsafe.Slice(p.mems, len(l.Memories))
	for i, m := range l.Memories {
		if m.Min > math.MaxUint || m.Max > math.MaxUint || m.Image >= len(l.Images) {
			C.atl_plan_release(p)
			return nil, fmt.Errorf("memory plan: memory %d (%d..%d bytes, image %d) cannot be created", i, m.Min, m.Max, m.Image)
		}
		mems[i] = C.atl_planned_memory_t{min: C.size_t(m.Min), max: C.size_t(m.Max), image: C.int(m.Image)}
	}
	for i, img := range l.Images {
		if err := fillImage(p, i, img); err != nil {
			C.atl_plan_release(p)
			return nil, fmt.Errorf("memory plan: image %d of %d bytes: %w", i, img.Size, err)
		}
	}
	return &MemoryPlan{p: p}, nil
}

// fillImage writes image i of p into its memfd and seals it.
func fillImage(p *C.atl_plan_t, i int, img dataseg.Image) error {
	if img.Size == 0 || img.Size > math.MaxInt32 {
		return errors.New("bad size")
	}
	var ptr *C.uint8_t
	if e := C.atl_image_begin(p, C.size_t(i), C.size_t(img.Size), &ptr); e != 0 {
		return fmt.Errorf("create memfd: %w", syscall.Errno(e))
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(ptr)), img.Size)
	for _, s := range img.Segments {
		copy(dst[s.Offset:], s.Data) // dataseg keeps every segment within Size
	}
	if e := C.atl_image_seal(p, C.size_t(i), ptr); e != 0 {
		return fmt.Errorf("seal memfd: %w", syscall.Errno(e))
	}
	return nil
}

// Close drops the caller's reference: the memfds are closed once no component that was given
// the plan is open either (memories mapped from them keep their mappings). Idempotent.
func (mp *MemoryPlan) Close() {
	if mp.closed.CompareAndSwap(false, true) {
		C.atl_plan_release(mp.p)
	}
}

// SetMemoryPlan makes every later instantiation of the component follow mp, which must be
// the plan of the source the component was compiled from with dataseg.Prepare (dataseg.Plan
// of it): an instantiation that creates other memories, or fewer, fails. The component keeps
// the plan until Close. Only on engines with EngineConfig.CapMemories, at most once, before
// the component is instantiated.
func (c *Component) SetMemoryPlan(mp *MemoryPlan) error {
	if !c.eng.capMemories {
		return errors.New("memory plan: the engine has no memory creator")
	}
	if c.plan != nil {
		return errors.New("memory plan: already set")
	}
	if mp.closed.Load() {
		return errors.New("memory plan: closed")
	}
	C.atl_plan_retain(mp.p)
	c.plan = mp.p
	return nil
}
