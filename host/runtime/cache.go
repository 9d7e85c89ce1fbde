package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"atelier/host/runtime/internal/capi"
)

// Artifact cache entry layout: magic, sha256 of the payload, payload (Wasmtime's serialized
// component). Wasmtime trusts artifacts it deserializes, so the checksum is verified first:
// a damaged file is recompiled, never loaded.
const cacheMagic = "ATELIER-CWASM-1\n"

const checksumLen = sha256.Size

// load compiles src, or deserializes its cached artifact.
func (rt *Runtime) load(src []byte) (*capi.Component, error) {
	if rt.cacheDir == "" {
		return rt.compile(src)
	}
	path := rt.cachePath(src)
	if c, err := rt.fromCache(path); c != nil {
		rt.hits.Add(1)
		return c, nil
	} else if err != nil {
		rt.corrupt.Add(1)
		rt.log.Warn("artifact cache entry is damaged; recompiling", "path", path, "err", err)
		_ = os.Remove(path)
	}
	c, err := rt.compile(src)
	if err != nil {
		return nil, err
	}
	if err := rt.toCache(path, c); err != nil {
		rt.log.Warn("cannot store compiled artifact", "path", path, "err", err)
	}
	return c, nil
}

func (rt *Runtime) compile(src []byte) (*capi.Component, error) {
	rt.compiles.Add(1)
	return rt.eng.Compile(src)
}

// cachePath is keyed by the source's sha256 and a hash of the engine fingerprint (Wasmtime
// version and the settings that change generated code).
func (rt *Runtime) cachePath(src []byte) string {
	sum := sha256.Sum256(src)
	fp := sha256.Sum256([]byte(rt.fingerprint))
	return filepath.Join(rt.cacheDir, hex.EncodeToString(sum[:])+"-"+hex.EncodeToString(fp[:8])+".cwasm")
}

// fromCache returns (nil, nil) for a missing entry and an error for a damaged one.
func (rt *Runtime) fromCache(path string) (*capi.Component, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) < len(cacheMagic)+checksumLen || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errors.New("bad header")
	}
	sum, payload := b[len(cacheMagic):len(cacheMagic)+checksumLen], b[len(cacheMagic)+checksumLen:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	c, err := rt.eng.Deserialize(payload)
	if err != nil {
		return nil, fmt.Errorf("deserialize: %w", err)
	}
	return c, nil
}

// toCache writes the artifact atomically (temporary file, then rename).
func (rt *Runtime) toCache(path string, c *capi.Component) error {
	payload, err := c.Serialize()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	f, err := os.CreateTemp(rt.cacheDir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(append(append([]byte{}, cacheMagic...), sum[:]...), payload...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
