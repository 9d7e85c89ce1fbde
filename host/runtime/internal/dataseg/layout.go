package dataseg

// Layout lists the linear memories that one instantiation of a component creates, in the
// order Wasmtime creates them, and the initial contents (images) of the memories whose
// modules Prepare compiles without their data segments. A memory creator that is told this
// order can map each image copy-on-write, as Wasmtime itself does for its own memories.
//
// The order is derived from the binary as Wasmtime's inliner walks it: a component's core
// instance and component instance sections in section order, each `instantiate` of a core
// module creating that module's defined memories (in index order), each `instantiate` of a
// nested component doing the same for that component's sections at that point. Adapter
// modules that Wasmtime adds import their memories and define none. The order is only
// provable when every core module and component index refers to a module or component
// section of its own component; anything else (an imported, aliased or exported module or
// component, a memory type other than 32-bit unshared with 64 KiB pages, a binary not
// understood) gives no Layout.
type Layout struct {
	// Memories lists every memory the instantiation creates, in creation order.
	Memories []Memory
	// Images are the initial contents of the imaged memories.
	Images []Image
}

// Memory is one memory an instantiation creates.
type Memory struct {
	// Min and Max are its limits in bytes as Wasmtime hands them to a memory creator: the
	// declared ones, and 4 GiB (what a 32-bit memory can address) when it declares no maximum.
	Min, Max uint64
	// Image indexes Layout.Images; -1 for a memory that starts zero (its module keeps its
	// data segments, which Wasmtime copies in).
	Image int
}

// Image is the initial content of a memory: zeros except for the segments.
type Image struct {
	// Size is the end of the last segment in bytes; it is at most the memory's minimum.
	Size uint64
	// Segments are pairwise disjoint.
	Segments []Segment
}

// MinImageData is the least number of data bytes for which a module's memory gets an image:
// mapping an image and faulting its pages in costs more than copying a few kilobytes.
const MinImageData = 16 << 10

// Limits on what a layout describes; beyond them there is no Layout.
const (
	maxDepth    = 32     // nested components
	maxMemories = 10000  // Wasmtime's default limit of memories per store
	maxSteps    = 100000 // instantiations (nested components instantiated twice at each level would be exponential)
)

const (
	wasmPage  = 64 << 10
	maxMemory = 1 << 32 // bytes a 32-bit memory can address
)

// Plan returns the Layout of the component bin (as Prepare would return it), or nil when the
// creation order of its memories is not provable or no memory gets an image.
func Plan(bin []byte) *Layout {
	_, l := plan(bin)
	return l
}

// Prepare returns the component bin as it should be compiled when the memory creator maps
// the images of Plan: the data segments of the imaged modules taken out, those of every other
// module merged as by Merge. With a nil Layout it returns Merge(bin).
func Prepare(bin []byte) ([]byte, *Layout) {
	root, l := plan(bin)
	if l == nil {
		return Merge(bin), nil
	}
	return root.rewrite(bin), l
}

func plan(bin []byte) (*compDef, *Layout) {
	root, ok := parseComponent(bin, 0)
	if !ok {
		return nil, nil
	}
	l := &Layout{}
	steps := maxSteps
	if !root.expand(l, make(map[*modDef]int), &steps) || len(l.Images) == 0 {
		return nil, nil
	}
	return root, l
}

// compDef is a component definition: its module and component sections (which are its whole
// core module and component index spaces) and its instantiations, in section order.
type compDef struct {
	modules []*modDef
	comps   []*compDef
	steps   []step
}

// step instantiates a module or a component.
type step struct {
	module *modDef
	comp   *compDef
}

// modDef is a core module definition: the limits of its defined memories and, when its data
// segments come out, the image of memory 0.
type modDef struct {
	mems  []Memory // Image -1
	image *Image
}

// expand appends the memories of one instantiation of c to l; false when there are too many,
// or more instantiations than *steps allows. images maps a module to its image's index in
// l.Images.
func (c *compDef) expand(l *Layout, images map[*modDef]int, steps *int) bool {
	for _, s := range c.steps {
		if *steps--; *steps < 0 {
			return false
		}
		if s.comp != nil {
			if !s.comp.expand(l, images, steps) {
				return false
			}
			continue
		}
		if len(l.Memories)+len(s.module.mems) > maxMemories {
			return false
		}
		for i, m := range s.module.mems {
			if i == 0 && s.module.image != nil {
				idx, ok := images[s.module]
				if !ok {
					idx = len(l.Images)
					images[s.module] = idx
					l.Images = append(l.Images, *s.module.image)
				}
				m.Image = idx
			}
			l.Memories = append(l.Memories, m)
		}
	}
	return true
}

// rewrite returns the component with the imaged modules' data sections removed and every
// other module's segments merged; c was parsed from bin.
func (c *compDef) rewrite(bin []byte) []byte {
	secs, _ := sections(bin[8:]) // parsed before
	out := append([]byte(nil), bin[:8]...)
	mods, comps := c.modules, c.comps
	for _, s := range secs {
		payload := s.payload
		switch s.id {
		case 1:
			if mods[0].image != nil {
				payload = stripData(payload)
			} else if p, ok := mergeModule(payload); ok {
				payload = p
			}
			mods = mods[1:]
		case 4:
			payload = comps[0].rewrite(payload)
			comps = comps[1:]
		}
		out = appendSection(out, s.id, payload)
	}
	return out
}

// stripData returns the module without its data section.
func stripData(bin []byte) []byte {
	secs, _ := sections(bin[8:]) // parsed before
	out := append([]byte(nil), bin[:8]...)
	for _, s := range secs {
		if s.id != 11 {
			out = appendSection(out, s.id, s.payload)
		}
	}
	return out
}

// parseComponent reads a component's index spaces and instantiations; false when the order
// of its memories cannot be proved (see Layout).
func parseComponent(bin []byte, depth int) (*compDef, bool) {
	if depth > maxDepth || len(bin) < 8 || string(bin[:4]) != string(magic) || bin[6] != 1 || bin[7] != 0 {
		return nil, false
	}
	secs, ok := sections(bin[8:])
	if !ok {
		return nil, false
	}
	c := &compDef{}
	for _, s := range secs {
		r := reader{b: s.payload}
		switch s.id {
		case 0, 3, 7, 8, 9: // custom, core types, types, canonical functions, start
			continue
		case 1:
			m, ok := parseModule(s.payload)
			if !ok {
				return nil, false
			}
			c.modules = append(c.modules, m)
			continue
		case 4:
			nested, ok := parseComponent(s.payload, depth+1)
			if !ok {
				return nil, false
			}
			c.comps = append(c.comps, nested)
			continue
		case 2:
			ok = c.coreInstances(&r)
		case 5:
			ok = c.instances(&r)
		case 6:
			ok = aliases(&r)
		case 10:
			ok = imports(&r)
		case 11:
			ok = exports(&r)
		default: // values, or not understood
			return nil, false
		}
		if !ok || r.bad || !r.done() {
			return nil, false
		}
	}
	return c, true
}

// coreInstances reads a core instance section.
func (c *compDef) coreInstances(r *reader) bool {
	for n := r.u32(); n > 0 && !r.bad; n-- {
		switch r.byte() {
		case 0x00: // instantiate a module
			idx := r.u32()
			if r.bad || uint64(idx) >= uint64(len(c.modules)) {
				return false
			}
			c.steps = append(c.steps, step{module: c.modules[idx]})
			for args := r.u32(); args > 0 && !r.bad; args-- {
				r.name()
				if r.byte() != 0x12 { // an instance
					return false
				}
				r.u32()
			}
		case 0x01: // from inline exports
			for exps := r.u32(); exps > 0 && !r.bad; exps-- {
				r.name()
				r.byte()
				r.u32()
			}
		default:
			return false
		}
	}
	return true
}

// instances reads a component instance section.
func (c *compDef) instances(r *reader) bool {
	for n := r.u32(); n > 0 && !r.bad; n-- {
		switch r.byte() {
		case 0x00: // instantiate a component
			idx := r.u32()
			if r.bad || uint64(idx) >= uint64(len(c.comps)) {
				return false
			}
			c.steps = append(c.steps, step{comp: c.comps[idx]})
			for args := r.u32(); args > 0 && !r.bad; args-- {
				r.name()
				r.sort()
				r.u32()
			}
		case 0x01: // from inline exports
			for exps := r.u32(); exps > 0 && !r.bad; exps-- {
				if !r.externName() {
					return false
				}
				r.sort()
				r.u32()
			}
		default:
			return false
		}
	}
	return true
}

// Sorts as reader.sort returns them.
const (
	sortCoreModule = 0x100 | 0x11
	sortComponent  = 0x04
)

// aliases reads an alias section; false when an alias adds a core module or a component.
func aliases(r *reader) bool {
	for n := r.u32(); n > 0 && !r.bad; n-- {
		if s := r.sort(); s == sortCoreModule || s == sortComponent {
			return false
		}
		switch r.byte() {
		case 0x00, 0x01: // export of an instance or a core instance
			r.u32()
			r.name()
		case 0x02: // outer
			r.u32()
			r.u32()
		default:
			return false
		}
	}
	return true
}

// imports reads an import section; false when it imports a core module, a component or a
// value.
func imports(r *reader) bool {
	for n := r.u32(); n > 0 && !r.bad; n-- {
		if !r.externName() || !r.externDesc() {
			return false
		}
	}
	return true
}

// exports reads an export section; false when it exports (and so adds an index for) a core
// module or a component.
func exports(r *reader) bool {
	for n := r.u32(); n > 0 && !r.bad; n-- {
		if !r.externName() {
			return false
		}
		if s := r.sort(); s == sortCoreModule || s == sortComponent {
			return false
		}
		r.u32()
		switch r.byte() {
		case 0x00:
		case 0x01: // an ascribed type
			if !r.externDesc() {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// parseModule reads the memories of a core module and, when they can come out, the image its
// data segments make.
func parseModule(bin []byte) (*modDef, bool) {
	if len(bin) < 8 || string(bin[:4]) != string(magic) || string(bin[4:8]) != string(coreLayer) {
		return nil, false
	}
	secs, ok := sections(bin[8:])
	if !ok {
		return nil, false
	}
	m := &modDef{}
	for _, s := range secs {
		if s.id != 5 {
			continue
		}
		if m.mems != nil {
			return nil, false
		}
		if m.mems, ok = memories(s.payload); !ok {
			return nil, false
		}
	}
	if data := dataSection(secs); data >= 0 && len(m.mems) > 0 {
		m.image = imageOf(secs[data].payload, m.mems[0].Min)
	}
	return m, true
}

// memories reads a memory section; false for a memory other than 32-bit and unshared with
// 64 KiB pages.
func memories(b []byte) ([]Memory, bool) {
	r := reader{b: b}
	n := r.u32()
	if r.bad || uint64(n) > uint64(len(b)) {
		return nil, false
	}
	mems := make([]Memory, 0, n)
	for i := uint32(0); i < n && !r.bad; i++ {
		min, max, hasMax, ok := r.limits()
		if !ok {
			return nil, false
		}
		m := Memory{Min: uint64(min) * wasmPage, Max: maxMemory, Image: -1}
		if hasMax {
			m.Max = uint64(max) * wasmPage
		}
		mems = append(mems, m)
	}
	return mems, !r.bad && r.done()
}

// imageOf returns the image of a data section whose segments may come out: all active in
// memory 0 at i32.const offsets, pairwise disjoint, ending within the memory's minimum
// (else instantiation must trap, which is Wasmtime's to do), and at least MinImageData bytes.
// Otherwise nil.
func imageOf(data []byte, min uint64) *Image {
	segs, ok := parseData(data)
	if !ok {
		return nil
	}
	spans, ok := sortedDisjoint(segs)
	if !ok || len(spans) == 0 {
		return nil
	}
	size := spans[len(spans)-1].end() // sorted and disjoint: the last ends last
	var total uint64
	for _, sp := range spans {
		total += uint64(sp.n)
	}
	if size > min || total < MinImageData {
		return nil
	}
	return &Image{Segments: segs, Size: size}
}

// name reads a string.
func (r *reader) name() { r.bytes(r.u32()) }

// externName reads an import or export name (a discriminator byte and a string).
func (r *reader) externName() bool {
	if b := r.byte(); b != 0x00 && b != 0x01 {
		return false
	}
	r.name()
	return !r.bad
}

// sort reads a sort: one byte, or 0x00 and a core sort byte, returned as 0x100 | that byte.
func (r *reader) sort() int {
	if s := r.byte(); s != 0x00 {
		return int(s)
	}
	return 0x100 | int(r.byte())
}

// externDesc reads the type of an import or export; false for a core module, a component,
// a value, or a descriptor not understood.
func (r *reader) externDesc() bool {
	switch r.byte() {
	case 0x01, 0x05: // func, instance: a type index
		r.u32()
	case 0x03: // type: a bound
		switch r.byte() {
		case 0x00:
			r.u32()
		case 0x01:
		default:
			return false
		}
	default: // 0x00 0x11 core module, 0x02 value, 0x04 component
		return false
	}
	return !r.bad
}
