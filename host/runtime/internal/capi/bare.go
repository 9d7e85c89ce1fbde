package capi

import (
	"fmt"
	"strings"

	"atelier/host/runtime/wit"
)

// Bare drives a component through this package alone, with no runtime layer (no grants, audit,
// value conversion from JSON-ish forms, deadlines, locks or caches). Benchmarks run the same
// operations through host/runtime and through Bare, so the ratio is the runtime's overhead.
type Bare struct {
	eng      *Engine
	linker   *Linker
	comp     *Component
	src      []byte
	artifact []byte
	funcs    map[string]*wit.FuncType
}

// BareEngineConfig is the engine configuration host/runtime uses by default, so that Bare
// measures the same generated code.
func BareEngineConfig(maxWasmStack uint) EngineConfig {
	return EngineConfig{MaxWasmStack: maxWasmStack, Epoch: true, ParallelCompilation: true}
}

// NewBare compiles src and prepares a linker with WASI and every other imported interface
// defined with functions that trap when called.
func NewBare(cfg EngineConfig, src []byte) (*Bare, error) {
	b := &Bare{eng: NewEngine(cfg), src: src, funcs: make(map[string]*wit.FuncType)}
	var err error
	if b.comp, err = b.eng.Compile(src); err != nil {
		b.Close()
		return nil, err
	}
	if b.artifact, err = b.comp.Serialize(); err != nil {
		b.Close()
		return nil, err
	}
	b.linker = NewLinker(b.eng)
	if err := b.linker.AddWASIP2(); err != nil {
		b.Close()
		return nil, err
	}
	imports, exports := b.comp.Items()
	if err := defineTrapping(b.linker, imports); err != nil {
		b.Close()
		return nil, err
	}
	for _, it := range exports {
		if it.Kind == wit.ItemFunc {
			b.funcs[it.Name] = it.Func
		}
	}
	return b, nil
}

// Compile compiles the source again (and discards the result).
func (b *Bare) Compile() error {
	c, err := b.eng.Compile(b.src)
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

// Deserialize loads the compiled artifact from memory (and discards the result).
func (b *Bare) Deserialize() error {
	c, err := b.eng.Deserialize(b.artifact)
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

// BareInstance is an instance with its store.
type BareInstance struct {
	b    *Bare
	s    *Store
	inst *Instance
}

// Instantiate creates a store (with the same WASI setup as host/runtime) and an instance.
func (b *Bare) Instantiate() (*BareInstance, error) {
	s, err := NewStore(b.eng, StoreConfig{})
	if err != nil {
		return nil, err
	}
	inst, err := b.linker.Instantiate(s, b.comp)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &BareInstance{b: b, s: s, inst: inst}, nil
}

// BareFunc is a top-level exported function ready to call.
type BareFunc struct {
	f  Func
	ft *wit.FuncType
}

// Func looks up a top-level exported function.
func (bi *BareInstance) Func(name string) (BareFunc, error) {
	ft, ok := bi.b.funcs[name]
	idx, found := bi.b.comp.Export(name)
	if !ok || !found {
		return BareFunc{}, fmt.Errorf("no exported function %q", name)
	}
	f, ok := bi.inst.Func(idx)
	if !ok {
		return BareFunc{}, fmt.Errorf("export %q is not a function", name)
	}
	return BareFunc{f: f, ft: ft}, nil
}

// Call calls the function with the canonical arguments in args and appends the canonical result
// to res (see wit.Flat): the Go values a caller reads its results from, like a struct.
func (f BareFunc) Call(args, res *wit.Flat) error { return f.f.Call(f.ft, args, res, 0) }

// Close deletes the store.
func (bi *BareInstance) Close() { bi.s.Close() }

// Close releases the component, linker and engine.
func (b *Bare) Close() {
	if b.comp != nil {
		b.comp.Close()
	}
	if b.linker != nil {
		b.linker.Close()
	}
	b.eng.Close()
}

// Type returns the function's signature.
func (f BareFunc) Type() *wit.FuncType { return f.ft }

// defineTrapping defines every non-WASI imported instance with functions that trap when called.
// (Wasmtime's define_unknown_imports_as_traps cannot serve: it would also shadow the WASI
// interfaces a component imports at a newer compatible version than Wasmtime's.)
func defineTrapping(l *Linker, imports []wit.Item) error {
	for _, it := range imports {
		if it.Kind != wit.ItemInstance || strings.HasPrefix(it.Name, "wasi:") {
			continue
		}
		var funcs []HostFunc
		for _, f := range it.Exports {
			if f.Kind != wit.ItemFunc {
				continue
			}
			ft, name := f.Func, it.Name+"#"+f.Name
			funcs = append(funcs, HostFunc{
				Name:      f.Name,
				Signature: func(*Store) (*wit.FuncType, error) { return ft, nil },
				Call: func(*Store, *wit.FuncType, *wit.Flat, *wit.Flat) error {
					return fmt.Errorf("%s is not available in the bare benchmark", name)
				},
			})
		}
		if err := l.DefineInstance(it.Name, nil, funcs); err != nil {
			return fmt.Errorf("define %s: %w", it.Name, err)
		}
	}
	return nil
}
