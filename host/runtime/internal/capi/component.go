package capi

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"atelier/host/runtime/wit"
)

// Component is a compiled component. It is safe for concurrent use.
type Component struct {
	eng    *Engine
	ptr    *C.wasmtime_component_t
	plan   *C.atl_plan_t // the memories of an instantiation and their images (SetMemoryPlan), or nil
	closed atomic.Bool

	mu      sync.Mutex // guards exports
	exports map[string]*ExportIndex
}

// ExportIndex locates an exported function of a component; it is valid for every instance of
// that component until the component is closed.
type ExportIndex struct {
	ptr *C.wasmtime_component_export_index_t
}

func newComponent(e *Engine, ptr *C.wasmtime_component_t) *Component {
	return &Component{eng: e, ptr: ptr, exports: make(map[string]*ExportIndex)}
}

// Serialize returns the compiled artifact, loadable with Engine.Deserialize.
func (c *Component) Serialize() ([]byte, error) {
	var v C.wasm_byte_vec_t
	if err := C.wasmtime_component_serialize(c.ptr, &v); err != nil {
		return nil, takeError(err)
	}
	defer C.wasm_byte_vec_delete(&v)
	return C.GoBytes(unsafe.Pointer(v.data), C.int(v.size)), nil
}

// Export returns the index of the function at path: one name for a top-level export, or an
// instance export name followed by the function name ("wasi:cli/run@0.2.0", "run").
// Results are cached on the component.
func (c *Component) Export(path ...string) (*ExportIndex, bool) {
	key := strings.Join(path, "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exports == nil { // closed
		return nil, false
	}
	if x, ok := c.exports[key]; ok {
		return x, x != nil
	}
	var idx *C.wasmtime_component_export_index_t
	for _, name := range path {
		cname := C.CString(name)
		next := C.wasmtime_component_get_export_index(c.ptr, idx, cname, C.size_t(len(name)))
		C.free(unsafe.Pointer(cname))
		if idx != nil {
			C.wasmtime_component_export_index_delete(idx)
		}
		idx = next
		if idx == nil {
			break
		}
	}
	var x *ExportIndex
	if idx != nil {
		x = &ExportIndex{ptr: idx}
	}
	c.exports[key] = x
	return x, x != nil
}

// Close releases the component, its cached export indexes and its memory images. Instances
// already created keep running (Wasmtime reference-counts the code, and a mapped image keeps
// its memfd), but can no longer look up exports.
func (c *Component) Close() {
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	for _, x := range c.exports {
		if x != nil {
			C.wasmtime_component_export_index_delete(x.ptr)
		}
	}
	c.exports = nil
	c.mu.Unlock()
	C.wasmtime_component_delete(c.ptr)
	C.atl_plan_release(c.plan)
}

// Items reflects the component's type: every import and every export, with instance exports
// nested and function signatures converted to wit types.
func (c *Component) Items() (imports, exports []wit.Item) {
	ty := C.wasmtime_component_type(c.ptr)
	defer C.wasmtime_component_type_delete(ty)
	n := int(C.wasmtime_component_type_import_count(ty, c.eng.ptr))
	for i := 0; i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if C.wasmtime_component_type_import_nth(ty, c.eng.ptr, C.size_t(i), &name, &nlen, &item) {
			imports = append(imports, c.eng.convertItem(C.GoStringN(name, C.int(nlen)), &item, nil))
			C.wasmtime_component_item_delete(&item)
		}
	}
	rootScope := c.eng.rootScope(ty)
	defer rootScope.delete()
	n = int(C.wasmtime_component_type_export_count(ty, c.eng.ptr))
	for i := 0; i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if C.wasmtime_component_type_export_nth(ty, c.eng.ptr, C.size_t(i), &name, &nlen, &item) {
			exports = append(exports, c.eng.convertItem(C.GoStringN(name, C.int(nlen)), &item, rootScope))
			C.wasmtime_component_item_delete(&item)
		}
	}
	return imports, exports
}
