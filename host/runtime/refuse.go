package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrNotComponent: the bytes given to Compile are neither a component binary nor WAT text (a
// core module, an image, a JS file...).
var ErrNotComponent = errors.New("not a WebAssembly component")

// ErrAsync: the component uses the component model's async features (async functions,
// streams, futures, error contexts), which WASI 0.3 components need and this host does not
// support.
var ErrAsync = errors.New("the component needs the component model's async features, which this host does not support")

var (
	wasmMagic     = []byte("\x00asm")
	moduleVersion = []byte{0x01, 0x00, 0x00, 0x00}
	// wasi3Name matches the name of a WASI 0.3 interface, as it appears in the import and
	// export names of a component binary.
	wasi3Name = regexp.MustCompile(`wasi:[a-z0-9-]+/[a-z0-9-]+@0\.3\.[0-9]+[a-z0-9.-]*`)
)

// checkSource refuses up front what cannot be a component: neither a component binary nor
// text that could be WAT (which starts with `(` after white space and `;;` comments).
func checkSource(src []byte) error {
	if bytes.HasPrefix(src, wasmMagic) {
		if len(src) >= 8 && bytes.Equal(src[4:8], moduleVersion) {
			return fmt.Errorf("%w: it is a core WebAssembly module; make it a component (e.g. `wasm-tools component new`, or build for wasm32-wasip2)", ErrNotComponent)
		}
		return nil
	}
	rest := bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	for {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if !bytes.HasPrefix(rest, []byte(";;")) {
			break
		}
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i+1:]
		} else {
			rest = nil
		}
	}
	if !bytes.HasPrefix(rest, []byte("(")) {
		return fmt.Errorf("%w: neither a binary (which starts with \\0asm) nor WAT text; pass the .wasm file the build produced", ErrNotComponent)
	}
	return nil
}

// explainCompile turns Wasmtime's refusal of a component that uses the async component model
// ("invalid leading byte (0x43) for component defined type", "`stream` requires the component
// model async feature") into ErrAsync, naming the WASI 0.3 interfaces it mentions. Other
// errors are returned as they are.
func explainCompile(src []byte, err error) error {
	msg := err.Error()
	if !bytes.HasPrefix(src, wasmMagic) || !(strings.Contains(msg, "component model async feature") ||
		strings.Contains(msg, "component model error-context feature") ||
		strings.Contains(msg, "invalid leading byte (0x43) for component defined type")) {
		return err
	}
	var wasi3 []string
	for _, m := range wasi3Name.FindAll(src, -1) {
		if s := string(m); !slices.Contains(wasi3, s) {
			wasi3 = append(wasi3, s)
		}
	}
	why := "it uses async functions, streams or futures"
	if len(wasi3) > 0 {
		slices.Sort(wasi3)
		why = "it targets WASI 0.3 (" + strings.Join(wasi3, ", ") + ")"
	}
	return fmt.Errorf("%w: %s; build it for WASI 0.2 (e.g. wasm32-wasip2) without async exports (wasmtime: %s)", ErrAsync, why, firstCause(msg))
}

// firstCause is the line of a Wasmtime error that says what went wrong: the first line after
// "Caused by:", or the first line.
func firstCause(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "Caused by:" && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1])
		}
	}
	return strings.TrimSpace(lines[0])
}
