package capi

import (
	"fmt"

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

// NewBare compiles src and prepares a linker with WASI and every other import defined as a
// trapping stub.
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
	if err := b.linker.DefineUnknownImportsAsTraps(b.comp); err != nil {
		b.Close()
		return nil, err
	}
	_, exports := b.comp.Items()
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
func (f BareFunc) Call(args, res *wit.Flat) error { return f.f.Call(f.ft, args, res) }

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
