package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// Component is a compiled component with its audit. It is safe for concurrent use and can be
// instantiated any number of times.
type Component struct {
	c      *capi.Component
	plan   *sharedPlan // its memory images (nil without the memory creator)
	closed atomic.Bool

	// Reflecting the type is slower than loading a cached artifact, so it happens once, on
	// first use; everything below is set by reflect and read-only afterwards.
	once  sync.Once
	audit *Audit

	// imports maps "iface#func" (unversioned iface) to the imported function's type.
	imports map[string]*wit.FuncType
	// exports maps every accepted spelling of an exported function to its location.
	exports map[string]export
	// ambiguous holds the unversioned spellings ("iface#fn") of functions exported by more
	// than one version of an interface: they name none of them.
	ambiguous map[string]bool
	// wasi is set when the component imports any wasi:* interface; hostIfaces lists its other
	// imported interfaces (unversioned).
	wasi       bool
	hostIfaces []string // sorted
	// linkerKey names the linker that defines exactly what the component imports.
	linkerKey string
}

type export struct {
	name string   // canonical spelling, for messages
	path []string // as capi.Component.Export wants it
	ft   *wit.FuncType
	// lift is wit.LiftFactor of its result: what Wasmtime may allocate lifting the result,
	// per byte of the instance's memory (see Limits.MaxLiftBytes).
	lift int64
}

// Compile compiles a component from its binary or WAT text, or loads its compiled artifact
// from the cache when an earlier Compile stored one for the same bytes and engine settings.
// It refuses with ErrNotComponent what is neither (a core module included), and with
// ErrAsync a component that needs the async component model (WASI 0.3).
func (rt *Runtime) Compile(ctx context.Context, src []byte) (*Component, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rt.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkSource(src); err != nil {
		return nil, fmt.Errorf("compile component: %w", err)
	}
	c, plan, err := rt.load(src)
	if err != nil {
		return nil, fmt.Errorf("compile component: %w", explainCompile(src, err))
	}
	return &Component{c: c, plan: plan}, nil
}

// reflected returns comp after making sure its type has been reflected.
func (comp *Component) reflected() *Component {
	comp.once.Do(comp.reflect)
	return comp
}

func (comp *Component) reflect() {
	imports, exports := comp.c.Items()
	comp.audit = &Audit{Imports: imports, Exports: exports}
	comp.imports = make(map[string]*wit.FuncType)
	comp.exports = make(map[string]export)
	comp.ambiguous = make(map[string]bool)
	for _, it := range imports {
		iface := it.Interface()
		if isWASI(iface) {
			comp.wasi = true
			continue
		}
		if it.Kind == wit.ItemInstance {
			comp.hostIfaces = append(comp.hostIfaces, iface)
			for _, f := range it.Exports {
				if f.Kind == wit.ItemFunc {
					comp.imports[iface+"#"+f.Name] = f.Func
				}
			}
		}
	}
	slices.Sort(comp.hostIfaces)
	comp.linkerKey = fmt.Sprintf("%t|%s", comp.wasi, strings.Join(comp.hostIfaces, ","))
	for _, it := range exports {
		switch it.Kind {
		case wit.ItemFunc:
			comp.exports[it.Name] = export{name: it.Name, path: []string{it.Name}, ft: it.Func, lift: wit.LiftFactor(it.Func.Result)}
		case wit.ItemInstance:
			for _, f := range it.Exports {
				if f.Kind != wit.ItemFunc {
					continue
				}
				e := export{name: it.Name + "#" + f.Name, path: []string{it.Name, f.Name}, ft: f.Func, lift: wit.LiftFactor(f.Func.Result)}
				comp.exports[e.name] = e
				// The unversioned spelling names no export when two versions have the function.
				alias := it.Interface() + "#" + f.Name
				if prev, ok := comp.exports[alias]; ok && prev.name != e.name || comp.ambiguous[alias] {
					delete(comp.exports, alias)
					comp.ambiguous[alias] = true
				} else {
					comp.exports[alias] = e
				}
			}
		}
	}
}

// Audit returns the component's imports and exports, read from its type.
func (c *Component) Audit() *Audit { return c.reflected().audit }

// Close releases the compiled code once no instance uses it any more. Idempotent.
func (c *Component) Close() {
	if c.closed.CompareAndSwap(false, true) {
		c.c.Close()
		if c.plan != nil {
			c.plan.release()
		}
	}
}

func (c *Component) export(name string) (export, *capi.ExportIndex, error) {
	e, ok := c.reflected().exports[name]
	if !ok && c.ambiguous[name] {
		return export{}, nil, fmt.Errorf("%w: %q: the component exports the interface at more than one version; name the version (iface@version#fn)", ErrNoExport, name)
	}
	if !ok {
		return export{}, nil, fmt.Errorf("%w: %q", ErrNoExport, name)
	}
	idx, ok := c.c.Export(e.path...)
	if !ok {
		return export{}, nil, fmt.Errorf("%w: %q", ErrNoExport, name)
	}
	return e, idx, nil
}

// Audit lists what a component imports and exports, with WIT-like signatures. It is what
// `atelier inspect` prints, and what grants are checked against before instantiation.
type Audit struct {
	Imports []wit.Item
	Exports []wit.Item
}

// Check reports whether grants (see WASIBaseline) cover every import of the component, given
// the host interfaces of rt, and whether those interfaces define every resource the component
// imports from them. It returns nil or *UngrantedImportError / *UnprovidedImportError values
// joined with errors.Join.
func (a *Audit) Check(rt *Runtime, grants []string) error {
	return errors.Join(
		CheckGrants(a.Imports, grants, func(iface string) bool { _, ok := rt.ifaces[iface]; return ok }),
		rt.checkResources(a.Imports))
}

// Lines renders one line per function, type and resource, instance members flattened as
// `instance.member`: `import atelier:host/kv@0.1.0.get: func(key: string) -> ...`. An
// internal export (see Internal) ends with `(internal: why)`.
func (a *Audit) Lines() []string {
	var out []string
	for _, it := range a.Imports {
		out = appendItem(out, "import ", it)
	}
	for _, it := range a.Exports {
		n := len(out)
		out = appendItem(out, "export ", it)
		if why := Internal(it); why != "" {
			out[n] += " (internal: " + why + ")"
		}
	}
	return out
}

// qjsInit is the signature of the `init` function componentize-qjs exports: the host that
// snapshots the component calls it once, with the JS engine's shim and the gadget's script.
const qjsInit = "func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>"

// Internal says why export it belongs to the toolchain that built the component rather than
// to its interface, or returns "": componentize-qjs's `init`, which the build already called
// and which would replace the gadget's script if called again. Such exports are not part of
// a gadget's RPC surface, bindings or declarations (see PublicExports).
func Internal(it wit.Item) string {
	if it.Kind == wit.ItemFunc && it.Name == "init" && it.Func.String() == qjsInit {
		return "componentize-qjs's initializer, called once at build time; not callable"
	}
	return ""
}

// PublicExports returns the exports without the internal ones (see Internal): what callers of
// the component may call.
func (a *Audit) PublicExports() []wit.Item {
	return slices.DeleteFunc(slices.Clone(a.Exports), func(it wit.Item) bool { return Internal(it) != "" })
}

func appendItem(out []string, prefix string, it wit.Item) []string {
	switch it.Kind {
	case wit.ItemInstance:
		if len(it.Exports) == 0 {
			return append(out, prefix+it.Name+": instance {}")
		}
		for _, sub := range it.Exports {
			out = appendItem(out, prefix+it.Name+".", sub)
		}
		return out
	case wit.ItemFunc:
		return append(out, prefix+it.Name+": "+it.Func.String())
	case wit.ItemType:
		return append(out, prefix+it.Name+": type "+it.Type.Definition())
	}
	return append(out, prefix+it.Name+": "+it.Kind.String())
}

// String renders Lines, one per line.
func (a *Audit) String() string { return strings.Join(a.Lines(), "\n") }
