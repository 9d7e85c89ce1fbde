package kernel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"atelier/capnweb"
	"atelier/host/capability/bindings"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/jsruntime"
)

// A JS gadget's code is a source bundle: its .js and .ts files, stored as a gzip'd tar with
// the files in name order and no timestamps, so that the same files always make the same
// bytes (and the same version hash). Clients upload either that archive (bytes starting with
// the gzip magic) or an object {filename: source}; components start with the Wasm magic.

// Bounds of a JS bundle.
const (
	maxJSFiles    = 64
	maxJSFileName = 64
)

// gzipMagic starts every JS bundle; a component starts with "\x00asm".
var gzipMagic = []byte{0x1f, 0x8b}

// isBundle reports whether stored code is a JS bundle rather than a component.
func isBundle(code []byte) bool { return bytes.HasPrefix(code, gzipMagic) }

// normalizeCode turns an uploaded gadget code (component bytes, a JS bundle archive, or an
// object of JS/TS files) into the bytes that are stored, and the UI script (client.js) a JS
// gadget's files brought (nil: none).
func (k *Kernel) normalizeCode(code any) ([]byte, *string, error) {
	var files map[string]string
	if o, ok := code.(capnweb.Object); ok { // {filename: source} from Cap'n Web
		code = o.Map()
	}
	switch c := code.(type) {
	case []byte:
		if !isBundle(c) {
			return c, nil, nil // a component: checkCode compiles it
		}
		var err error
		if files, err = unpackBundle(c, k.cfg.MaxCode); err != nil {
			return nil, nil, err
		}
	case map[string]any:
		files = make(map[string]string, len(c))
		for name, src := range c {
			s, ok := src.(string)
			if !ok {
				return nil, nil, fail(CodeInvalidArgument, "gadget file %.70q: want its source as a string", name)
			}
			files[name] = s
		}
	case nil:
		return nil, nil, fail(CodeInvalidArgument, "gadget code is missing")
	default:
		return nil, nil, fail(CodeInvalidArgument, "gadget code: want bytes or an object {filename: source}, got %T", code)
	}
	client, err := takeClient(files)
	if err != nil {
		return nil, nil, err
	}
	bin, err := k.packFiles(files)
	return bin, client, err
}

// validFileName accepts flat names of .js and .ts files.
func validFileName(name string) error {
	ok := len(name) <= maxJSFileName && (strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".ts")) && len(name) > 3
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}
	if !ok || strings.HasPrefix(name, ".") {
		return fail(CodeInvalidArgument, "gadget file %.70q: want a flat name of at most %d letters, digits, '-', '_' and '.' ending in .js or .ts", name, maxJSFileName)
	}
	return nil
}

// packFiles checks a JS gadget's files and packs them as a bundle.
func (k *Kernel) packFiles(files map[string]string) ([]byte, error) {
	if len(files) == 0 || len(files) > maxJSFiles {
		return nil, fail(CodeInvalidArgument, "a JS gadget has %d files: want 1 to %d", len(files), maxJSFiles)
	}
	total := 0
	for name, src := range files {
		if err := validFileName(name); err != nil {
			return nil, err
		}
		if !utf8.ValidString(src) {
			return nil, fail(CodeInvalidArgument, "gadget file %s is not UTF-8 text", name)
		}
		total += len(src)
	}
	if total > k.cfg.MaxCode {
		return nil, fail(CodeInvalidArgument, "JS sources of %d bytes: at most %d", total, k.cfg.MaxCode)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		src := files[name]
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(src)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
		if _, err := io.WriteString(tw, src); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return nil, fmt.Errorf("pack JS gadget: %w", err)
	}
	return buf.Bytes(), nil
}

// unpackBundle reads a bundle's files, refusing anything but flat regular .js/.ts files and
// more than maxCode bytes of source.
func unpackBundle(code []byte, maxCode int) (map[string]string, error) {
	bad := func(format string, args ...any) (map[string]string, error) {
		return nil, fail(CodeInvalidArgument, "JS bundle: "+format, args...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(code))
	if err != nil {
		return bad("not a gzip'd tar: %v", err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	total := int64(0)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("%v", err)
		}
		if err := validFileName(h.Name); err != nil {
			return nil, err
		}
		if _, dup := files[h.Name]; dup || h.Typeflag != tar.TypeReg || len(files) >= maxJSFiles {
			return bad("entry %s: want at most %d distinct regular files", h.Name, maxJSFiles)
		}
		total += h.Size
		if h.Size < 0 || total > int64(maxCode) {
			return bad("more than %d bytes of source", maxCode)
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if err != nil || int64(len(data)) != h.Size {
			return bad("entry %s is truncated", h.Name)
		}
		files[h.Name] = string(data)
	}
	if len(files) == 0 {
		return bad("no files")
	}
	return files, nil
}

// jsEngine returns the kernel's JavaScript engine, compiling it on first use.
func (k *Kernel) jsEngine(ctx context.Context) (*jsruntime.Engine, error) {
	k.jsOnce.Do(func() {
		k.js, k.jsErr = jsruntime.New(ctx, k.cfg.Runtime)
	})
	if k.jsErr != nil {
		return nil, wrapErr(k.jsErr, "start the JavaScript engine")
	}
	return k.js, nil
}

// jsLimits are the limits of a JS gadget's calls: the kernel's call timeout.
func (k *Kernel) jsLimits() jsruntime.Limits {
	return jsruntime.Limits{Timeout: k.cfg.Limits.Timeout, MaxResult: k.cfg.Limits.MaxResult}
}

// checkBundle checks a JS bundle before it is stored: its grants include what the engine
// imports, and it loads (in a scratch instance with empty state and nothing bound) and
// exports class Gadget.
func (k *Kernel) checkBundle(ctx context.Context, code []byte, grants []string) error {
	for _, need := range jsruntime.GadgetGrants() {
		if !slices.Contains(grants, need) {
			return fail(CodeInvalidArgument, "a JS gadget needs the grant %s (it needs all of %s)", need, strings.Join(jsruntime.GadgetGrants(), ", "))
		}
	}
	files, err := unpackBundle(code, k.cfg.MaxCode)
	if err != nil {
		return err
	}
	eng, err := k.jsEngine(ctx)
	if err != nil {
		return err
	}
	g, err := eng.NewGadget(jsruntime.GadgetConfig{Name: "deploy-check", Files: files, Grants: k.grantSet(grants), Limits: k.jsLimits(),
		Bind: map[string]any{kv.Grant: kv.NewMemory(k.cfg.GadgetQuota), events.Grant: unboundEvents{}, bindings.Grant: unboundBindings{}}})
	if err != nil {
		return fail(CodeInvalidArgument, "the JS gadget does not build: %v", err)
	}
	defer g.Close()
	if _, err := g.Methods(ctx); err != nil {
		return fail(CodeInvalidArgument, "the JS gadget does not load: %v", err)
	}
	return nil
}

// unboundBindings refuses the binding calls of a deploy check.
type unboundBindings struct{}

func (unboundBindings) CallBinding(context.Context, string, string, []any) (any, error) {
	return nil, errors.New("bindings are not available while a gadget is checked")
}

// jsAudit describes a JS gadget's surface as the audit lines of inspect().
func jsAudit(files map[string]string, methods []string) []string {
	lines := []string{"kind: JS gadget (jsruntime), files " + strings.Join(slices.Sorted(maps.Keys(files)), ", ")}
	for _, g := range jsruntime.GadgetGrants() {
		lines = append(lines, "import "+g)
	}
	for _, m := range methods {
		lines = append(lines, "export "+m+": method")
	}
	return lines
}
