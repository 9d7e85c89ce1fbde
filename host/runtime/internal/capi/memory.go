package capi

// #include "shim.h"
import "C"

// LiveMemories returns the number of linear memories made by the memory creator
// (EngineConfig.CapMemories) that are alive in the process: every store's memories are freed
// when it is closed, which leak tests check with this count.
func LiveMemories() int64 { return int64(C.atl_live_memories()) }
