package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"atelier/host/runtime/internal/capi"
)

// Artifact cache entry layout: magic, CRC-32C of the payload (4 bytes, little endian),
// payload (Wasmtime's serialized component). Wasmtime trusts artifacts it deserializes, so the
// checksum is verified first: a damaged file is recompiled, never loaded. The checksum guards
// against damage, not against an attacker: whoever can write the cache directory (0700) can
// also write a matching checksum, so a cryptographic hash would buy nothing and cost a third
// of a cached load. The entry's name is the source's sha256, which is what keeps one
// component's bytes from loading another's artifact.
const cacheMagic = "ATELIER-CWASM-2\n"

const checksumLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readBufs recycles the buffers cache entries are read into: Wasmtime copies what it
// deserializes, so the bytes are garbage as soon as Deserialize returns.
var readBufs sync.Pool

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
	return filepath.Join(rt.cacheDir, hex.EncodeToString(sum[:])+"-"+rt.fingerprint+".cwasm")
}

// fromCache returns (nil, nil) for a missing entry and an error for a damaged one.
func (rt *Runtime) fromCache(path string) (*capi.Component, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	buf, _ := readBufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer readBufs.Put(buf)
	buf.Reset()
	_, err = buf.ReadFrom(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if len(b) < len(cacheMagic)+checksumLen || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errors.New("bad header")
	}
	sum, payload := b[len(cacheMagic):len(cacheMagic)+checksumLen], b[len(cacheMagic)+checksumLen:]
	if binary.LittleEndian.Uint32(sum) != crc32.Checksum(payload, castagnoli) {
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
	f, err := os.CreateTemp(rt.cacheDir, ".tmp-*")
	if err != nil {
		return err
	}
	entry := binary.LittleEndian.AppendUint32([]byte(cacheMagic), crc32.Checksum(payload, castagnoli))
	_, err = f.Write(append(entry, payload...))
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
