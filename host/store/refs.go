package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Code blobs are shared by every gadget version and blueprint with the same bytes. Each blob
// has a reference count in coderefs/<sha256>: one per gadget that has a version with that
// code, and one per blueprint. A commit that drops a count to zero deletes the blob in the
// same transaction.
//
// Every gadget's storage use (the bytes of its keys plus values) is kept in
// ws/<id>/usage/<gadget id>, updated by every kv mutation.

// CodeSHA is the key code blobs are stored under: the SHA-256 of code, in hex.
func CodeSHA(code []byte) string {
	sum := sha256.Sum256(code)
	return hex.EncodeToString(sum[:])
}

func getUint(v []byte) int64 {
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putUint(b *bolt.Bucket, key []byte, n int64) error {
	return b.Put(key, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// addRef changes the reference count of code blob sha by delta.
func addRef(tx *bolt.Tx, sha string, delta int64) error {
	refs := tx.Bucket(bucketCodeRefs)
	n := getUint(refs.Get([]byte(sha))) + delta
	if n <= 0 {
		return refs.Delete([]byte(sha))
	}
	return putUint(refs, []byte(sha), n)
}

// collectCode deletes the blobs among shas that nothing refers to.
func collectCode(tx *bolt.Tx, shas []string) error {
	if len(shas) == 0 {
		return nil // without opening the buckets: a transaction visits every bucket it opened when it commits
	}
	refs, code := tx.Bucket(bucketCodeRefs), tx.Bucket(bucketCode)
	for _, sha := range shas {
		if refs.Get([]byte(sha)) == nil {
			if err := code.Delete([]byte(sha)); err != nil {
				return err
			}
		}
	}
	return nil
}

// codeOf returns the distinct code blobs of g's versions: their code and UI scripts.
func codeOf(g *Gadget) []string {
	var out []string
	for _, v := range g.Versions {
		for _, sha := range []string{v.SHA256, v.Client} {
			if sha != "" && !slices.Contains(out, sha) {
				out = append(out, sha)
			}
		}
	}
	return out
}

// putGadget stores g in the workspace bucket b, moving the code references from the old
// record's versions to the new one's; it appends the blobs that lost a reference to touched.
func putGadget(tx *bolt.Tx, b *bolt.Bucket, g *Gadget, touched []string) ([]string, error) {
	var before []string
	var old Gadget
	if err := getJSON(b.Bucket(subGadgets), []byte(g.ID), &old); err == nil {
		before = codeOf(&old)
	} else if !errors.Is(err, ErrNotFound) {
		return touched, err
	}
	after := codeOf(g)
	for _, sha := range after {
		if !slices.Contains(before, sha) {
			if err := addRef(tx, sha, 1); err != nil {
				return touched, err
			}
		}
	}
	for _, sha := range before {
		if !slices.Contains(after, sha) {
			if err := addRef(tx, sha, -1); err != nil {
				return touched, err
			}
			touched = append(touched, sha)
		}
	}
	return touched, putJSON(b.Bucket(subGadgets), []byte(g.ID), g)
}

// deleteGadget removes gadget id's record, state and usage from the workspace bucket b.
func deleteGadget(tx *bolt.Tx, b *bolt.Bucket, id GadgetID, touched []string) ([]string, error) {
	var old Gadget
	if err := getJSON(b.Bucket(subGadgets), []byte(id), &old); err == nil {
		for _, sha := range codeOf(&old) {
			if err := addRef(tx, sha, -1); err != nil {
				return touched, err
			}
			touched = append(touched, sha)
		}
	} else if !errors.Is(err, ErrNotFound) {
		return touched, err
	}
	if err := b.Bucket(subGadgets).Delete([]byte(id)); err != nil {
		return touched, err
	}
	if err := b.Bucket(subUsage).Delete([]byte(id)); err != nil {
		return touched, err
	}
	err := b.Bucket(subState).DeleteBucket([]byte(id))
	if errors.Is(err, bolt.ErrBucketNotFound) {
		err = nil
	}
	return touched, err
}

// deleteWorkspace removes workspace ws (bucket b) with everything in it.
func deleteWorkspace(tx *bolt.Tx, b *bolt.Bucket, ws WorkspaceID, touched []string) ([]string, error) {
	err := forEachJSON(b.Bucket(subGadgets), func(g Gadget) error {
		for _, sha := range codeOf(&g) {
			if err := addRef(tx, sha, -1); err != nil {
				return err
			}
			touched = append(touched, sha)
		}
		return nil
	})
	if err != nil {
		return touched, err
	}
	var w Workspace
	if err := getJSON(tx.Bucket(bucketWorkspaces), []byte(ws), &w); err != nil {
		return touched, err
	}
	if err := dropAccess(tx, w); err != nil {
		return touched, err
	}
	if err := tx.Bucket(bucketWorkspaces).Delete([]byte(ws)); err != nil {
		return touched, err
	}
	return touched, tx.Bucket(bucketWS).DeleteBucket([]byte(ws))
}

// addUsage changes gadget g's storage use in the workspace bucket b by delta.
func addUsage(b *bolt.Bucket, g GadgetID, delta int64) error {
	if delta == 0 {
		return nil
	}
	u := b.Bucket(subUsage)
	return putUint(u, []byte(g), getUint(u.Get([]byte(g)))+delta)
}

// Usage implements WorkspaceStore.
func (w *boltWS) Usage(g GadgetID) (int64, error) {
	var n int64
	err := w.view(func(b *bolt.Bucket) error {
		n = getUint(b.Bucket(subUsage).Get([]byte(g)))
		return nil
	})
	return n, err
}

// migrateV3 rebuilds the code reference counts and the usage counters from the records and
// state, then deletes the code blobs nothing refers to. It is idempotent.
func migrateV3(tx *bolt.Tx) error {
	if tx.Bucket(bucketCodeRefs) != nil {
		if err := tx.DeleteBucket(bucketCodeRefs); err != nil {
			return err
		}
	}
	if _, err := tx.CreateBucket(bucketCodeRefs); err != nil {
		return err
	}
	err := tx.Bucket(bucketWS).ForEachBucket(func(id []byte) error {
		b := tx.Bucket(bucketWS).Bucket(id)
		if b.Bucket(subUsage) != nil {
			if err := b.DeleteBucket(subUsage); err != nil {
				return err
			}
		}
		usage, err := b.CreateBucket(subUsage)
		if err != nil {
			return err
		}
		err = b.Bucket(subState).ForEachBucket(func(g []byte) error {
			var n int64
			err := b.Bucket(subState).Bucket(g).ForEach(func(k, v []byte) error {
				n += int64(len(k) + len(v))
				return nil
			})
			if err != nil {
				return err
			}
			return putUint(usage, g, n)
		})
		if err != nil {
			return err
		}
		return forEachJSON(b.Bucket(subGadgets), func(g Gadget) error {
			for _, sha := range codeOf(&g) {
				if err := addRef(tx, sha, 1); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	err = forEachJSON(tx.Bucket(bucketBlueprints), func(bp Blueprint) error { return addRef(tx, bp.SHA256, 1) })
	if err != nil {
		return err
	}
	var all []string
	err = tx.Bucket(bucketCode).ForEach(func(k, _ []byte) error {
		all = append(all, string(k))
		return nil
	})
	if err != nil {
		return fmt.Errorf("list code: %w", err)
	}
	return collectCode(tx, all)
}

// putCode stores code under its sha256 unless it is there already: code is content-addressed,
// so rewriting megabytes of an existing blob would only cost a slower commit.
func putCode(tx *bolt.Tx, sha string, code []byte) error {
	b := tx.Bucket(bucketCode)
	if b.Get([]byte(sha)) != nil {
		return nil
	}
	return b.Put([]byte(sha), code)
}
