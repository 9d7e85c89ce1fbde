package capnweb

import (
	"context"
	"slices"
	"strconv"
)

// Client side of .map(): Promise.Map records a mapper function once and sends the recording as
// a remap expression; the peer replays it for every element (PROTOCOL.md section 7).

// Mapper records the instructions of one map function.
type Mapper struct {
	s        *Session
	parent   *Mapper
	root     *Mapper
	active   *Mapper // on the root: the mapper whose function is running
	captures []capture
	instrs   [][]byte
	err      error
}

// capture is one entry of a mapper's capture list.
type capture struct {
	stub  *Stub  // top-level mapper: a stub to pass
	outer MapRef // nested mapper: an entry (without path) of an enclosing mapper
}

// MapRef names a value inside a map function: the input element, a captured stub or the result
// of a recorded call. It is only valid inside the function that received it.
type MapRef struct {
	m    *Mapper
	ref  int64
	path []any
}

// newMapper returns the mapper of a map function nested in parent (nil for the top level).
func newMapper(s *Session, parent *Mapper) *Mapper {
	m := &Mapper{s: s, parent: parent}
	m.root = m
	if parent != nil {
		m.root = parent.root
	}
	return m
}

// run records fn's instructions with m as the active mapper.
func (m *Mapper) run(fn func(in MapRef) any) {
	prev := m.root.active
	m.root.active = m
	m.finish(fn(MapRef{m: m}))
	m.root.active = prev
}

// Get returns a reference to a property of the value.
func (r MapRef) Get(path ...any) MapRef {
	return MapRef{m: r.m, ref: r.ref, path: append(slices.Clone(r.path), normalizePath(path)...)}
}

// Call records a call of method on the value. Arguments may hold MapRefs, plain values and stubs
// (which are captured).
func (r MapRef) Call(method string, args ...any) MapRef {
	return r.m.root.active.record(r, append(slices.Clone(r.path), method), args)
}

// CallFunc records a call of the value itself.
func (r MapRef) CallFunc(args ...any) MapRef {
	return r.m.root.active.record(r, slices.Clone(r.path), args)
}

// Map records a nested map over the value.
func (r MapRef) Map(fn func(in MapRef) any) MapRef {
	m := r.m.root.active
	inner := newMapper(m.s, m)
	inner.run(fn)
	if inner.err != nil {
		m.fail(inner.err)
		return MapRef{m: m}
	}
	b, err := m.refExpr([]byte(`["remap",`), r)
	if err != nil {
		m.fail(err)
		return MapRef{m: m}
	}
	b, _ = appendRaw(append(b, ','), r.path)
	b = append(b, ",["...)
	for i, c := range inner.captures {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = m.refExpr(append(b, `["import",`...), c.outer); err != nil {
			m.fail(err)
			return MapRef{m: m}
		}
		b = append(b, ']')
	}
	b = append(append(b, "],"...), joinInstrs(inner.instrs)...)
	return m.add(append(b, ']'))
}

// Capture returns a reference to a stub (for instance the peer's main object) for use inside
// the map function.
func (r MapRef) Capture(st *Stub) MapRef {
	return r.m.root.capture(st)
}

func (m *Mapper) capture(st *Stub) MapRef {
	for i, c := range m.captures {
		if c.stub == st {
			return MapRef{m: m, ref: -int64(i + 1)}
		}
	}
	m.captures = append(m.captures, capture{stub: st})
	return MapRef{m: m, ref: -int64(len(m.captures))}
}

func (m *Mapper) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// record adds ["pipeline", ref, path, args].
func (m *Mapper) record(target MapRef, path []any, args []any) MapRef {
	b, err := m.refExpr([]byte(`["pipeline",`), target)
	if err == nil {
		b, _ = appendRaw(append(b, ','), path)
		var cargs []any
		if cargs, err = canonicalArgs(m.s, args); err == nil {
			b, err = encodeArgs(append(b, ','), cargs, m, m.s.lim.MaxDepth)
		}
	}
	if err != nil {
		m.fail(err)
		return MapRef{m: m}
	}
	return m.add(append(b, ']'))
}

// add appends an instruction and returns a reference to its result.
func (m *Mapper) add(instr []byte) MapRef {
	m.instrs = append(m.instrs, instr)
	return MapRef{m: m, ref: int64(len(m.instrs))}
}

// finish records the function's result as the last instruction.
func (m *Mapper) finish(result any) {
	cv, err := canonicalize(m.s, result)
	if err == nil {
		var b []byte
		if b, err = encodeValue(nil, cv, m, m.s.lim.MaxDepth); err == nil {
			m.add(b)
		}
	}
	m.fail(err)
}

// refExpr appends the table id of r after prefix. A reference into an enclosing mapper is
// captured (without its path, which the caller writes).
func (m *Mapper) refExpr(prefix []byte, r MapRef) ([]byte, error) {
	if r.m == nil {
		return nil, TypeError("MapRef used outside its map function")
	}
	id := r.ref
	if r.m != m {
		if !m.isAncestor(r.m) {
			return nil, TypeError("MapRef used outside its map function")
		}
		outer := MapRef{m: r.m, ref: r.ref}
		found := slices.IndexFunc(m.captures, func(c capture) bool { return c.outer.m == outer.m && c.outer.ref == outer.ref })
		if found < 0 {
			m.captures = append(m.captures, capture{outer: outer})
			found = len(m.captures) - 1
		}
		id = -int64(found + 1)
	}
	return strconv.AppendInt(prefix, id, 10), nil
}

func (m *Mapper) isAncestor(a *Mapper) bool {
	for p := m.parent; p != nil; p = p.parent {
		if p == a {
			return true
		}
	}
	return false
}

// encodeMapRef writes a MapRef met in a value as ["pipeline", id, path].
func (m *Mapper) encodeMapRef(b []byte, r MapRef) ([]byte, error) {
	b, err := m.refExpr(append(b, `["pipeline",`...), r)
	if err != nil {
		return nil, err
	}
	if len(r.path) > 0 {
		b, _ = appendRaw(append(b, ','), r.path)
	}
	return append(b, ']'), nil
}

// encodeStub captures a stub used inside the map function.
func (m *Mapper) encodeStub(b []byte, st *Stub) ([]byte, error) {
	return m.encodeMapRef(b, m.root.capture(st))
}

func (m *Mapper) encodePromise([]byte, *Promise) ([]byte, error) {
	return nil, TypeError("promises cannot be used inside a map function; capture a stub instead")
}

func (m *Mapper) encodeReadable([]byte, *ReadableStream) ([]byte, error) {
	return nil, TypeError("streams cannot be used inside a map function")
}

func (m *Mapper) encodeWritable([]byte, *WritableStream) ([]byte, error) {
	return nil, TypeError("streams cannot be used inside a map function")
}

func joinInstrs(instrs [][]byte) []byte {
	b := []byte{'['}
	for i, in := range instrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, in...)
	}
	return append(b, ']')
}

// Map sends fn's recording to the peer, which applies it to the promised value: to each element
// if it is an array, once otherwise, not at all if it is null or undefined. fn runs once, locally,
// and may only record calls through MapRefs (and stubs, which are captured); it must not block.
func (p *Promise) Map(ctx context.Context, fn func(in MapRef) any) *Promise {
	if err := ctx.Err(); err != nil {
		return &Promise{h: errorHook{err}}
	}
	h, path, err := p.state()
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	ih, ok := h.(*importHook)
	if !ok {
		return &Promise{h: errorHook{TypeError("Map needs a promise for a value of the peer")}}
	}
	m := newMapper(ih.s, nil)
	m.run(fn)
	if m.err != nil {
		return &Promise{h: errorHook{m.err}}
	}
	return &Promise{h: ih.push(func(b []byte, enc *encState) ([]byte, error) {
		b = strconv.AppendInt(append(b, `["remap",`...), ih.e.id, 10)
		b, _ = appendRaw(append(b, ','), path)
		b = append(b, ",["...)
		for i, c := range m.captures {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = enc.encodeStub(b, c.stub); err != nil {
				return nil, err
			}
		}
		b = append(append(b, "],"...), joinInstrs(m.instrs)...)
		return append(b, ']'), nil
	})}
}
