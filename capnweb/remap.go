package capnweb

// Server side of .map(): ["remap", id, path, captures, instructions] (PROTOCOL.md section 7).

// decodeRemap implements capDecoder for a remap expression in a message.
func (s *Session) decodeRemap(id int64, path []any, captures []any, instrs []any) (any, error) {
	s.mu.Lock()
	e := s.exports[id]
	s.mu.Unlock()
	if e == nil {
		return nil, badMessage("remap of unknown export id %d", id)
	}
	caps := make([]*Stub, 0, len(captures))
	for _, c := range captures {
		st, err := s.decodeCapture(c)
		if err != nil {
			for _, st := range caps {
				st.Dispose()
			}
			return nil, err
		}
		caps = append(caps, st)
	}
	return s.startMap(&Promise{h: e.hook.dup(), path: path}, caps, instrs), nil
}

// decodeCapture decodes one capture of a top-level remap: ["import", id] or ["export", id].
func (s *Session) decodeCapture(raw any) (*Stub, error) {
	c, ok := raw.([]any)
	if !ok || len(c) != 2 {
		return nil, badMessage("bad remap capture")
	}
	id, err := idArg(c[1])
	if err != nil {
		return nil, err
	}
	var v any
	switch c[0] {
	case "import":
		v, err = s.decodeRef(true, id, nil, nil, false)
	case "export":
		v, err = s.decodeExport(id)
	default:
		return nil, badMessage("bad remap capture")
	}
	if err != nil {
		return nil, err
	}
	return v.(*Stub), nil
}

// startMap applies the instructions to the input value (per element if it is an array) and
// returns a promise for the result. It owns input and caps; the captures are disposed when the
// map has finished.
func (s *Session) startMap(input *Promise, caps []*Stub, instrs []any) *Promise {
	r := newPromiseHook(s)
	input.whenSettled(func(v any, err error) {
		if isTypedList(v) {
			v, _ = boxList(v)
		}
		switch val := v.(type) {
		case nil, UndefinedType:
			r.settle(val, err)
		case []any:
			if err != nil {
				r.settle(nil, err)
				break
			}
			outs := make([]any, len(val))
			for i, el := range val {
				if outs[i], err = s.runMapper(el, caps, instrs); err != nil {
					break
				}
			}
			r.resolveWith(outs, err)
		default:
			if err != nil {
				r.settle(nil, err)
				break
			}
			r.resolveWith(s.runMapper(val, caps, instrs))
		}
		input.Dispose()
	})
	r.whenSettled(func(any, error) {
		for _, c := range caps {
			c.Dispose()
		}
	})
	return &Promise{h: r}
}

// runMapper evaluates the instructions for one input element; the result may hold promises.
func (s *Session) runMapper(input any, caps []*Stub, instrs []any) (any, error) {
	m := &mapRun{s: s, input: input, caps: caps}
	dec := &decoder{lim: s.lim, caps: m}
	for _, ins := range instrs {
		v, err := dec.value(ins)
		if err != nil {
			disposeValue(m.results)
			return nil, err
		}
		m.results = append(m.results, v)
	}
	last := m.results[len(m.results)-1]
	disposeValue(m.results[:len(m.results)-1])
	return last, nil
}

// mapRun is the reference table of one mapper run: 0 is the input, -k the captures, +k the
// results of earlier instructions. It implements capDecoder for the instructions.
type mapRun struct {
	s       *Session
	input   any
	caps    []*Stub
	results []any
}

func (m *mapRun) lookup(ref int64) (any, error) {
	switch {
	case ref == 0:
		return m.input, nil
	case ref < 0 && -ref <= int64(len(m.caps)):
		return m.caps[-ref-1], nil
	case ref > 0 && ref <= int64(len(m.results)):
		return m.results[ref-1], nil
	}
	return nil, badMessage("map instruction refers to unknown entry %d", ref)
}

// refHook returns a new hook reference for a table entry.
func (m *mapRun) refHook(ref int64) (hook, error) {
	base, err := m.lookup(ref)
	if err != nil {
		return nil, err
	}
	switch b := base.(type) {
	case *Stub:
		h, err := b.hook()
		if err != nil {
			return nil, err
		}
		return h.dup(), nil
	case *Promise:
		h, err := b.materialize()
		if err != nil {
			return nil, err
		}
		return h.dup(), nil
	}
	return resolvedHook(m.s, dupValue(base), nil), nil
}

func (m *mapRun) decodeExport(int64) (any, error) {
	return nil, badMessage("export is not allowed in map instructions")
}

func (m *mapRun) decodePromise(int64) (any, error) {
	return nil, badMessage("promise is not allowed in map instructions")
}

func (m *mapRun) decodeReadable(int64) (any, error) {
	return nil, badMessage("readable is not allowed in map instructions")
}

func (m *mapRun) decodeWritable(int64) (any, error) {
	return nil, badMessage("writable is not allowed in map instructions")
}

func (m *mapRun) decodeRef(asStub bool, ref int64, path []any, args []any, hasArgs bool) (any, error) {
	h, err := m.refHook(ref)
	if err != nil {
		disposeList(args)
		return nil, err
	}
	if hasArgs {
		ch := h.call(path, args, true)
		h.dispose()
		if asStub {
			return &Stub{h: ch}, nil
		}
		return &Promise{h: ch}, nil
	}
	if asStub {
		if len(path) == 0 {
			return &Stub{h: h}, nil
		}
		ch := h.call(path, nil, false)
		h.dispose()
		return &Stub{h: ch}, nil
	}
	return &Promise{h: h, path: path}, nil
}

func (m *mapRun) decodeRemap(ref int64, path []any, captures []any, instrs []any) (any, error) {
	h, err := m.refHook(ref)
	if err != nil {
		return nil, err
	}
	caps := make([]*Stub, 0, len(captures))
	for _, c := range captures {
		ci, ok := c.([]any)
		var st any
		if ok && len(ci) == 2 && ci[0] == "import" {
			var id int64
			if id, err = idArg(ci[1]); err == nil {
				st, err = m.decodeRef(true, id, nil, nil, false)
			}
		} else {
			err = badMessage("bad capture in nested remap")
		}
		if err != nil {
			h.dispose()
			for _, c := range caps {
				c.Dispose()
			}
			return nil, err
		}
		caps = append(caps, st.(*Stub))
	}
	return m.s.startMap(&Promise{h: h, path: path}, caps, instrs), nil
}
