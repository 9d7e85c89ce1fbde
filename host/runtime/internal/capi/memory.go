package capi

// #include "shim.h"
import "C"

// LiveMemories returns the number of linear memories made by the memory creator
// (EngineConfig.CapMemories) that are in use in the process: every store's memories are freed
// when it is closed, which leak tests check with this count.
func LiveMemories() int64 { return int64(C.atl_live_memories()) }

// PooledMemories returns the number of freed linear memories that the memory creators of the
// process's engines keep for reuse (EngineConfig.KeepMemories); an engine's are unmapped when
// it is closed.
func PooledMemories() int64 { return int64(C.atl_pooled_memories()) }

// ImagedMemories returns the number of linear memories in use in the process whose start is
// mapped from a memory image (Component.SetMemoryPlan); tests check with it that images are
// used, and that freed memories no longer map them.
func ImagedMemories() int64 { return int64(C.atl_imaged_memories()) }

// TrimmedPages returns the number of host pages, in the whole process, that held only zeros
// when an instantiation finished and were given back to the kernel (MADV_FREE: no longer the
// instance's dirty memory; they read as zero whatever the kernel does with them): a guest's
// start-up that writes zeros costs its instance nothing. Tests check with it that the
// trimming happens.
func TrimmedPages() int64 { return int64(C.atl_trimmed_pages()) }
