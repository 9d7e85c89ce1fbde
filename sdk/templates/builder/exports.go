package builder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"atelier/sdk/templates"
	"atelier/sdk/wit"
)

// wantExport is a function the world exports, by the name the code must give it.
type wantExport struct {
	core string // the core module's export name ("increment", "ns:pkg/iface@1.0.0#f")
	// plugin is the Extism plugin function's name ("open-session" -> "open_session").
	plugin string
	js     string // the JS module's export name ("increment", or the interface's "connector")
	// method is, for a function of an exported interface, its name on the JS object
	// ("resourceKinds"); "" for a function the world exports.
	method string
	sig    string // the WIT declaration, for messages
	pos    wit.Pos
}

// worldExports lists the functions of w's exports (interfaces' functions one by one).
func worldExports(w *wit.World) []wantExport {
	var out []wantExport
	for _, it := range w.AllExports {
		switch it.Kind {
		case wit.ItemFunc:
			out = append(out, wantExport{core: it.Func.CoreName(), plugin: pluginName(it.Func.Name),
				js: templates.CamelCase(it.Func.Name), sig: "export " + it.Func.Name, pos: it.Pos})
		case wit.ItemInterface:
			id := it.Interface.ID()
			name := it.Name
			if name == "" {
				name = it.Interface.Name
			}
			for _, f := range it.Interface.Funcs {
				out = append(out, wantExport{core: id + "#" + f.CoreName(), plugin: pluginName(f.Name),
					js: templates.CamelCase(name), method: templates.CamelCase(f.Name),
					sig: "export " + id + " (" + f.Name + ")", pos: f.Pos})
			}
		}
	}
	return out
}

// pluginName is the Extism plugin function of a WIT function, as host/gatekeeper/extism
// calls it: "open-session" -> "open_session".
func pluginName(fn string) string { return strings.ReplaceAll(fn, "-", "_") }

// missingExports returns the messages for the wanted exports that have is false for.
func missingExports(want []wantExport, has func(wantExport) bool, hint func(string) string) error {
	var errs []error
	seen := map[string]bool{}
	for _, e := range want {
		if has(e) {
			continue
		}
		name := e.core
		if hint == nil {
			name = e.js
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		how := fmt.Sprintf("export a function (or, for an interface, an object) named %s from the entry module", e.js)
		if hint != nil {
			how = hint(e.core)
		}
		errs = append(errs, fmt.Errorf("%s: %s is not implemented: %s", e.pos, e.sig, how))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("the code is missing exports of its world:\n%w", errors.Join(errs...))
}

// checkCoreExports checks that the core module at path exports every function of the world
// (by its plugin function name for an Extism plugin).
func (b *build) checkCoreExports(path string, hint func(string) string) error {
	mod, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	names, err := coreExports(mod)
	if err != nil {
		return fmt.Errorf("read the compiled module's exports: %w", err)
	}
	want := worldExports(b.world)
	if b.cfg.Format == templates.FormatExtism {
		for i := range want {
			want[i].core = want[i].plugin
		}
	}
	return missingExports(want, func(e wantExport) bool { return names[e.core] }, hint)
}

// coreExports returns the export names of a core WebAssembly module.
func coreExports(mod []byte) (map[string]bool, error) {
	if len(mod) < 8 || string(mod[:4]) != "\x00asm" || binary.LittleEndian.Uint32(mod[4:8]) != 1 {
		return nil, errors.New("not a core WebAssembly module")
	}
	r := reader{b: mod[8:]}
	for len(r.b) > 0 {
		id := r.byte()
		size := r.uleb()
		if r.err != nil || uint64(len(r.b)) < size {
			return nil, errors.New("truncated section")
		}
		body := reader{b: r.b[:size]}
		r.b = r.b[size:]
		if id != 7 { // the export section
			continue
		}
		names := map[string]bool{}
		for n := body.uleb(); n > 0 && body.err == nil; n-- {
			names[body.name()] = true
			body.byte() // kind
			body.uleb() // index
		}
		return names, body.err
	}
	return map[string]bool{}, nil
}

// reader reads the LEB128 integers, bytes and names of a module; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := 0; shift < 64 && r.err == nil; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	if r.err == nil {
		r.err = errors.New("bad LEB128 integer")
	}
	return 0
}

func (r *reader) name() string {
	n := r.uleb()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errors.New("truncated name")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
