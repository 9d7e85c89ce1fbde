package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/internal/dataseg"
)

// Artifact cache layout: every entry is two files named by the same key, the source's sha256
// and the engine fingerprint (which includes cacheFormat):
//
//	KEY.cwasm  Wasmtime's serialized component, byte for byte, so that Wasmtime can map the
//	           file (DeserializeFile) instead of copying it;
//	KEY.sum    its sidecar: cacheMagic, the artifact's size (8 bytes) and its CRC-32C
//	           (4 bytes), both little endian.
//
// Wasmtime trusts artifacts it deserializes, so an artifact is checked against its sidecar
// the first time this Runtime loads that file (same path, device and inode, size and mtime);
// a damaged entry is recompiled, never loaded. Later loads of the same file map it without
// reading it. The check guards against torn or damaged files, not against an attacker: whoever
// can write the cache directory (0700) can also write a matching sidecar. The key's sha256 is
// what keeps one component's bytes from loading another's artifact. See RATIONALE.md.
const (
	cacheMagic  = "ATELIER-CWASM-4\n"
	cacheFormat = 4 // part of the engine fingerprint: a new layout never reads old entries
	sumLen      = len(cacheMagic) + 8 + 4
)

// maxVerified bounds how many checked artifact files a Runtime remembers.
const maxVerified = 4096

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheEntry is the pair of files of one cache entry.
type cacheEntry struct {
	artifact, sum string
}

// verifiedFiles remembers the artifact files whose checksum this Runtime has checked (or
// which it wrote itself), with their identity at that time.
type verifiedFiles struct {
	mu sync.Mutex
	m  map[string]os.FileInfo
}

// has reports whether path was checked and is still the same file: same device and inode,
// size and modification time.
func (v *verifiedFiles) has(path string, fi os.FileInfo) bool {
	v.mu.Lock()
	prev, ok := v.m[path]
	v.mu.Unlock()
	return ok && os.SameFile(prev, fi) && prev.Size() == fi.Size() && prev.ModTime().Equal(fi.ModTime())
}

// add remembers path as checked, forgetting an arbitrary other file when full.
func (v *verifiedFiles) add(path string, fi os.FileInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = make(map[string]os.FileInfo)
	}
	if _, ok := v.m[path]; !ok && len(v.m) >= maxVerified {
		for k := range v.m {
			delete(v.m, k)
			break
		}
	}
	v.m[path] = fi
}

// forget drops path.
func (v *verifiedFiles) forget(path string) {
	v.mu.Lock()
	delete(v.m, path)
	v.mu.Unlock()
}

// checkCacheDir refuses a cache directory that others may write: Wasmtime runs whatever
// artifact it finds there, and the checksum only guards against damage.
func checkCacheDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %#o); make it 0700", dir, perm)
	}
	return nil
}

// load compiles src, or deserializes its cached artifact, and gives the component the memory
// plan of its source (plans.go) when the memory creator is on. The plan is recomputed from
// the source for a cached artifact: the cache key (the source's hash, cacheFormat) ties the
// artifact to the rewrite compile made of that source, so the plans match.
func (rt *Runtime) load(src []byte) (*capi.Component, *sharedPlan, error) {
	key := sha256.Sum256(src)
	c, layout, err := rt.loadCode(src, key)
	if err != nil {
		return nil, nil, err
	}
	if !rt.cfg.memoryCreator() {
		return c, nil, nil
	}
	sp, err := rt.plans.acquire(key, layout)
	if err == nil && sp.plan != nil {
		err = c.SetMemoryPlan(sp.plan)
	}
	if err != nil {
		if sp != nil {
			sp.release()
		}
		c.Close()
		return nil, nil, fmt.Errorf("memory images: %w", err)
	}
	return c, sp, nil
}

// loadCode compiles src, or deserializes its cached artifact; layout returns the memory
// layout of src (computed by the compilation, or to be computed).
func (rt *Runtime) loadCode(src []byte, key [32]byte) (c *capi.Component, layout func() *dataseg.Layout, err error) {
	if rt.cacheDir == "" {
		return rt.compile(src)
	}
	e := rt.cacheEntry(key)
	if c, err := rt.fromCache(e); c != nil {
		rt.hits.Add(1)
		return c, func() *dataseg.Layout { return dataseg.Plan(src) }, nil
	} else if err != nil {
		rt.corrupt.Add(1)
		rt.log.Warn("artifact cache entry is damaged; recompiling", "path", e.artifact, "err", err)
		rt.verified.forget(e.artifact)
		_ = os.Remove(e.artifact)
		_ = os.Remove(e.sum)
	}
	c, layout, err = rt.compile(src)
	if err != nil {
		return nil, nil, err
	}
	if err := rt.toCache(e, c); err != nil {
		rt.log.Warn("cannot store compiled artifact", "path", e.artifact, "err", err)
	}
	return c, layout, nil
}

func (rt *Runtime) compile(src []byte) (*capi.Component, func() *dataseg.Layout, error) {
	rt.compiles.Add(1)
	if !rt.cfg.memoryCreator() {
		c, err := rt.eng.Compile(src)
		return c, nil, err
	}
	// Without Wasmtime's copy-on-write images, the memory creator maps the images of the
	// memories whose modules are compiled without their data segments, and Wasmtime copies
	// the other modules' segments, merged (RATIONALE.md, "Memory cap").
	bin, layout := dataseg.Prepare(src)
	c, err := rt.eng.Compile(bin)
	return c, func() *dataseg.Layout { return layout }, err
}

// cacheEntry is keyed by the source's sha256 and a hash of the engine fingerprint (Wasmtime
// version, the settings that change generated code, the cache format).
func (rt *Runtime) cacheEntry(key [32]byte) cacheEntry {
	base := filepath.Join(rt.cacheDir, hex.EncodeToString(key[:])+"-"+rt.fingerprint)
	return cacheEntry{artifact: base + ".cwasm", sum: base + ".sum"}
}

// fromCache returns (nil, nil) for a missing entry and an error for a damaged one.
func (rt *Runtime) fromCache(e cacheEntry) (*capi.Component, error) {
	fi, err := os.Stat(e.artifact)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !rt.verified.has(e.artifact, fi) {
		return rt.loadChecked(e)
	}
	c, err := rt.eng.DeserializeFile(e.artifact)
	if err != nil {
		return nil, fmt.Errorf("deserialize: %w", err)
	}
	return c, nil
}

// loadChecked reads the artifact, checks it against its sidecar, deserializes the very bytes
// it checked and remembers the file as verified.
func (rt *Runtime) loadChecked(e cacheEntry) (*capi.Component, error) {
	size, crc, err := readSum(e.sum)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(e.artifact)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != size {
		return nil, fmt.Errorf("artifact is %d bytes, its sidecar says %d", fi.Size(), size)
	}
	artifact := make([]byte, size)
	if _, err := io.ReadFull(f, artifact); err != nil {
		return nil, fmt.Errorf("read artifact: %w", err)
	}
	if crc32.Checksum(artifact, castagnoli) != crc {
		return nil, errors.New("checksum mismatch")
	}
	c, err := rt.eng.Deserialize(artifact)
	if err != nil {
		return nil, fmt.Errorf("deserialize: %w", err)
	}
	rt.verified.add(e.artifact, fi)
	return c, nil
}

// readSum reads a sidecar: the artifact's size and CRC-32C.
func readSum(path string) (size int64, crc uint32, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read sidecar: %w", err)
	}
	if len(b) != sumLen || string(b[:len(cacheMagic)]) != cacheMagic {
		return 0, 0, errors.New("bad sidecar")
	}
	b = b[len(cacheMagic):]
	size = int64(binary.LittleEndian.Uint64(b))
	if size < 0 {
		return 0, 0, errors.New("bad sidecar")
	}
	return size, binary.LittleEndian.Uint32(b[8:]), nil
}

// toCache writes the entry, each file atomically (temporary file, then rename). The sidecar
// goes first, so that whoever finds the artifact finds its sidecar. The artifact is
// remembered as verified: this process wrote it.
func (rt *Runtime) toCache(e cacheEntry, c *capi.Component) error {
	artifact, err := c.Serialize()
	if err != nil {
		return err
	}
	sum := binary.LittleEndian.AppendUint64([]byte(cacheMagic), uint64(len(artifact)))
	sum = binary.LittleEndian.AppendUint32(sum, crc32.Checksum(artifact, castagnoli))
	if _, err := rt.writeAtomic(e.sum, sum); err != nil {
		return err
	}
	fi, err := rt.writeAtomic(e.artifact, artifact)
	if err != nil {
		return err
	}
	rt.verified.add(e.artifact, fi)
	return nil
}

// writeAtomic writes data to a temporary file in the cache directory and renames it to path.
// It returns the file's identity (rename keeps device, inode, size and mtime).
func (rt *Runtime) writeAtomic(path string, data []byte) (os.FileInfo, error) {
	f, err := os.CreateTemp(rt.cacheDir, ".tmp-*")
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(f.Name())
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	return fi, nil
}
