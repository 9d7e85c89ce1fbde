package gatekeeper

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Errors a refused package wraps (test with errors.Is).
var (
	// ErrBadArchive: the archive is not a tar of exactly manifest.json and gatekeeper.wasm.
	ErrBadArchive = errors.New("bad gatekeeper archive")
	// ErrTooLarge: the archive or one of its files exceeds the size limits.
	ErrTooLarge = errors.New("gatekeeper package too large")
	// ErrBadManifest: manifest.json is malformed or invalid.
	ErrBadManifest = errors.New("bad gatekeeper manifest")
	// ErrHashMismatch: gatekeeper.wasm does not have the manifest's component.sha256.
	ErrHashMismatch = errors.New("gatekeeper component hash mismatch")
	// ErrNotComponent: gatekeeper.wasm is not a valid WebAssembly component.
	ErrNotComponent = errors.New("gatekeeper.wasm is not a valid component")
	// ErrNotPlugin: gatekeeper.wasm of an extism package is not a valid core module.
	ErrNotPlugin = errors.New("gatekeeper.wasm is not a valid Extism plugin")
	// ErrWorldMismatch: the component does not export what the manifest's world requires, or
	// serves other resource kinds than the manifest lists.
	ErrWorldMismatch = errors.New("gatekeeper does not match its manifest's world")
	// ErrExcessImports: the component imports more than the gatekeeper world allows.
	ErrExcessImports = errors.New("gatekeeper imports more than its world allows")
)

// Size limits of a package.
const (
	MaxArchiveSize  = 48 << 20
	MaxManifestSize = 64 << 10
	MaxWasmSize     = MaxArchiveSize - MaxManifestSize - 4096
)

// File names inside the archive.
const (
	ManifestFile = "manifest.json"
	WasmFile     = "gatekeeper.wasm"
)

// Package is an opened, validated gatekeeper package. It has not been compiled yet (Install).
type Package struct {
	Manifest Manifest
	// Wasm is the component binary, whose SHA-256 is Manifest.Component.SHA256.
	Wasm []byte
	// Digest is "sha256:" and the hex SHA-256 of the archive: the package's identity.
	Digest string
}

// String names the package: "notes@0.1.0 (sha256:…)".
func (p *Package) String() string {
	return fmt.Sprintf("%s@%s (%s)", p.Manifest.Name, p.Manifest.Version, p.Digest)
}

// Open reads and validates a package archive: a tar (not compressed) holding exactly the
// regular files manifest.json and gatekeeper.wasm. It checks sizes, the manifest and the
// component's hash; the component itself is checked by Install.
func Open(archive []byte) (*Package, error) {
	if len(archive) > MaxArchiveSize {
		return nil, fmt.Errorf("%w: archive of %d bytes exceeds %d", ErrTooLarge, len(archive), MaxArchiveSize)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		limit := map[string]int64{ManifestFile: MaxManifestSize, WasmFile: MaxWasmSize}[h.Name]
		switch {
		case limit == 0:
			return nil, fmt.Errorf("%w: unexpected entry %q (want only %s and %s)", ErrBadArchive, h.Name, ManifestFile, WasmFile)
		case h.Typeflag != tar.TypeReg:
			return nil, fmt.Errorf("%w: %s is not a regular file", ErrBadArchive, h.Name)
		case files[h.Name] != nil:
			return nil, fmt.Errorf("%w: %s appears twice", ErrBadArchive, h.Name)
		case h.Size > limit:
			return nil, fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrTooLarge, h.Name, h.Size, limit)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s: %v", ErrBadArchive, h.Name, err)
		}
		files[h.Name] = data
	}
	for _, name := range []string{ManifestFile, WasmFile} {
		if files[name] == nil {
			return nil, fmt.Errorf("%w: no %s", ErrBadArchive, name)
		}
	}
	m, err := ParseManifest(files[ManifestFile])
	if err != nil {
		return nil, err
	}
	wasm := files[WasmFile]
	if sum := sha256.Sum256(wasm); hex.EncodeToString(sum[:]) != m.Component.SHA256 {
		return nil, fmt.Errorf("%w: %s has sha256 %x, the manifest says %s", ErrHashMismatch, WasmFile, sum, m.Component.SHA256)
	}
	// A component starts with the Wasm magic and the component layer (version 0x0d, layer 1);
	// a core module (an Extism plugin) with the magic and version 1.
	switch m.PackageFormat() {
	case FormatExtism:
		if !bytes.HasPrefix(wasm, []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) {
			return nil, fmt.Errorf("%w: no core module header (a component, or not WebAssembly)", ErrNotPlugin)
		}
	default:
		if !bytes.HasPrefix(wasm, []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}) {
			return nil, fmt.Errorf("%w: no component header (a core module, or not WebAssembly)", ErrNotComponent)
		}
	}
	sum := sha256.Sum256(archive)
	return &Package{Manifest: *m, Wasm: wasm, Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Pack builds a package archive from a manifest and a component: it sets
// m.Component.SHA256, validates the manifest and writes a reproducible tar.
func Pack(m Manifest, wasm []byte) ([]byte, error) {
	sum := sha256.Sum256(wasm)
	m.Component.SHA256 = hex.EncodeToString(sum[:])
	if err := m.Validate(); err != nil {
		return nil, err
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", m.Name, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{ManifestFile, append(manifest, '\n')}, {WasmFile, wasm}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.Name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("pack %s: %w", m.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pack %s: %w", m.Name, err)
	}
	if buf.Len() > MaxArchiveSize {
		return nil, fmt.Errorf("pack %s: %w: archive of %d bytes exceeds %d", m.Name, ErrTooLarge, buf.Len(), MaxArchiveSize)
	}
	return buf.Bytes(), nil
}
