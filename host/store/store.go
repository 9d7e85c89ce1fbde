// Package store keeps Atelier's durable state in one bbolt file: gadgets with their immutable
// code versions, and each gadget's key-value state. It knows bbolt and the data model, nothing
// of Wasm or RPC. Every write is committed (and fsync'd by bbolt) before the method returns.
//
// Layout of the file (schema version 1):
//
//	meta/schema          "1"
//	gadgets/<name>       JSON Gadget
//	code/<sha256 hex>    component bytes, shared by every version with that content
//	state/<name>/<key>   the gadget's key-value state
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout version this package reads and writes.
const SchemaVersion = 1

var (
	bucketMeta    = []byte("meta")
	bucketGadgets = []byte("gadgets")
	bucketCode    = []byte("code")
	bucketState   = []byte("state")
	keySchema     = []byte("schema")
)

// ErrNotFound is returned for a gadget or version that does not exist.
var ErrNotFound = errors.New("not found")

// Gadget is a gadget's record: its name, what it is granted and its code versions.
type Gadget struct {
	Name     string    `json:"name"`
	Grants   []string  `json:"grants"`
	Versions []Version `json:"versions"`
	// Current is the number of the version that runs.
	Current int `json:"current"`
}

// Version is one immutable code version of a gadget.
type Version struct {
	Number  int       `json:"number"`
	SHA256  string    `json:"sha256"`
	Size    int       `json:"size"`
	Created time.Time `json:"created"`
}

// CurrentVersion returns the version that runs.
func (g Gadget) CurrentVersion() (Version, error) {
	for _, v := range g.Versions {
		if v.Number == g.Current {
			return v, nil
		}
	}
	return Version{}, fmt.Errorf("gadget %s: current version %d: %w", g.Name, g.Current, ErrNotFound)
}

// DB is the bbolt-backed store. It is safe for concurrent use.
type DB struct {
	db  *bolt.DB
	now func() time.Time
}

// Open opens (creating if needed) the data file at path and migrates it to SchemaVersion.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: another atelier process holds it; stop it or pass another --data", path)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &DB{db: db, now: time.Now}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// migrate creates the buckets of a new file and refuses a file written by a newer Atelier.
func (s *DB) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySchema); v != nil {
			var have int
			if _, err := fmt.Sscan(string(v), &have); err != nil {
				return fmt.Errorf("schema version %q is not a number", v)
			}
			if have > SchemaVersion {
				return fmt.Errorf("data file has schema version %d, this atelier reads up to %d: upgrade atelier", have, SchemaVersion)
			}
		}
		for _, b := range [][]byte{bucketGadgets, bucketCode, bucketState} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return meta.Put(keySchema, fmt.Appendf(nil, "%d", SchemaVersion))
	})
}

// Close closes the data file.
func (s *DB) Close() error { return s.db.Close() }

// Deploy stores code as a new version of gadget name (creating the gadget if needed), makes it
// the current version and records grants. It returns the updated record.
func (s *DB) Deploy(_ context.Context, name string, code []byte, grants []string) (Gadget, error) {
	sum := sha256.Sum256(code)
	hash := hex.EncodeToString(sum[:])
	var g Gadget
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		g, err = getGadget(tx, name)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		g.Name = name
		g.Grants = append([]string(nil), grants...)
		next := 1
		if n := len(g.Versions); n > 0 {
			next = g.Versions[n-1].Number + 1
		}
		g.Versions = append(g.Versions, Version{Number: next, SHA256: hash, Size: len(code), Created: s.now().UTC()})
		g.Current = next
		if err := tx.Bucket(bucketCode).Put([]byte(hash), code); err != nil {
			return err
		}
		if _, err := tx.Bucket(bucketState).CreateBucketIfNotExists([]byte(name)); err != nil {
			return err
		}
		return putGadget(tx, g)
	})
	if err != nil {
		return Gadget{}, fmt.Errorf("deploy gadget %s: %w", name, err)
	}
	return g, nil
}

// Rollback makes version the current version of gadget name.
func (s *DB) Rollback(_ context.Context, name string, version int) (Gadget, error) {
	var g Gadget
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		if g, err = getGadget(tx, name); err != nil {
			return err
		}
		for _, v := range g.Versions {
			if v.Number == version {
				g.Current = version
				return putGadget(tx, g)
			}
		}
		return fmt.Errorf("version %d: %w", version, ErrNotFound)
	})
	if err != nil {
		return Gadget{}, fmt.Errorf("roll back gadget %s: %w", name, err)
	}
	return g, nil
}

// Gadget returns the record of gadget name and the code of its current version.
func (s *DB) Gadget(_ context.Context, name string) (Gadget, []byte, error) {
	var g Gadget
	var code []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if g, err = getGadget(tx, name); err != nil {
			return err
		}
		v, err := g.CurrentVersion()
		if err != nil {
			return err
		}
		c := tx.Bucket(bucketCode).Get([]byte(v.SHA256))
		if c == nil {
			return fmt.Errorf("code %s of version %d: %w", v.SHA256, v.Number, ErrNotFound)
		}
		code = bytes.Clone(c)
		return nil
	})
	if err != nil {
		return Gadget{}, nil, fmt.Errorf("load gadget %s: %w", name, err)
	}
	return g, code, nil
}

// Gadgets lists every gadget record in name order.
func (s *DB) Gadgets(_ context.Context) ([]Gadget, error) {
	var out []Gadget
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketGadgets).ForEach(func(k, v []byte) error {
			var g Gadget
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("gadget %s: %w", k, err)
			}
			out = append(out, g)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list gadgets: %w", err)
	}
	return out, nil
}

// Delete removes gadget name and its state. Code no other gadget uses is removed too.
func (s *DB) Delete(_ context.Context, name string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		g, err := getGadget(tx, name)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketGadgets).Delete([]byte(name)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketState).DeleteBucket([]byte(name)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		return dropUnusedCode(tx, g)
	})
	if err != nil {
		return fmt.Errorf("delete gadget %s: %w", name, err)
	}
	return nil
}

// dropUnusedCode deletes the code blobs of g's versions that no remaining gadget refers to.
func dropUnusedCode(tx *bolt.Tx, g Gadget) error {
	used := map[string]bool{}
	err := tx.Bucket(bucketGadgets).ForEach(func(_, v []byte) error {
		var other Gadget
		if err := json.Unmarshal(v, &other); err != nil {
			return err
		}
		for _, ver := range other.Versions {
			used[ver.SHA256] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, v := range g.Versions {
		if !used[v.SHA256] {
			if err := tx.Bucket(bucketCode).Delete([]byte(v.SHA256)); err != nil {
				return err
			}
		}
	}
	return nil
}

func getGadget(tx *bolt.Tx, name string) (Gadget, error) {
	v := tx.Bucket(bucketGadgets).Get([]byte(name))
	if v == nil {
		return Gadget{}, fmt.Errorf("gadget %s: %w", name, ErrNotFound)
	}
	var g Gadget
	if err := json.Unmarshal(v, &g); err != nil {
		return Gadget{}, fmt.Errorf("gadget %s: corrupt record: %w", name, err)
	}
	return g, nil
}

func putGadget(tx *bolt.Tx, g Gadget) error {
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketGadgets).Put([]byte(g.Name), v)
}
