package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Hooks live in a workspace sub-bucket, like schedules, and a server-wide index names every
// hook's workspace (so that an inbound request for /hooks/<id> finds it without opening every
// workspace), its account and source, and a poll hook's next poll. Both are written by the
// same commit and created by the first one that needs them (no migration).
var (
	subHooks        = []byte("hooks")     // hook id -> Hook
	bucketHookIndex = []byte("hookindex") // hook id -> HookRef (JSON)
)

// Hook is a gadget's registered callback from a gatekeeper: the gatekeeper behind the gadget's
// binding Binding fires Event (of its manifest's hooks), and the host calls the gadget's export
// Method with the event's payload, as Creator. Secret is the webhook's HMAC key sealed by the
// kernel (the store never sees it in clear; nil for other sources).
type Hook struct {
	ID      string   `json:"id"`
	Gadget  GadgetID `json:"gadget"`
	Method  string   `json:"method"`
	Binding string   `json:"binding"`
	Account string   `json:"account"`
	Event   string   `json:"event"`
	// Params is the JSON the gadget registered the hook with ("" when none).
	Params string `json:"params,omitempty"`
	// Source is the manifest's source of Event: "webhook", "poll" or "notify".
	Source  string `json:"source"`
	Secret  []byte `json:"secret,omitempty"`
	Creator string `json:"creator"`
	// EveryMs and Next are a poll hook's period and next poll.
	EveryMs int64     `json:"everyMs,omitempty"`
	Next    time.Time `json:"next,omitzero"`
	Created time.Time `json:"created"`
	// Fires counts the fires; LastFire and LastError describe the latest one.
	Fires     int64     `json:"fires"`
	LastFire  time.Time `json:"lastFire,omitzero"`
	LastError string    `json:"lastError,omitempty"`
}

// HookRef is a hook's entry in the server-wide index.
type HookRef struct {
	ID        string      `json:"id"`
	Workspace WorkspaceID `json:"ws"`
	Account   string      `json:"account"`
	Source    string      `json:"source"`
	// Next is a poll hook's next poll (zero for other sources).
	Next time.Time `json:"next,omitzero"`
}

// PutHook creates or replaces hook h of the workspace.
func PutHook(h Hook) Mutation { return Mutation{Kind: MutPutHook, Hook: &h} }

// DeleteHook removes hook id of the workspace (a missing one is not an error).
func DeleteHook(id string) Mutation { return Mutation{Kind: MutDeleteHook, Hook: &Hook{ID: id}} }

// checkHook refuses a hook mutation that cannot be applied.
func (m Mutation) checkHook() error {
	if m.Hook == nil || m.Hook.ID == "" || bytes.IndexByte([]byte(m.Hook.ID), 0) >= 0 {
		return errors.New("hook mutation without a valid id")
	}
	if m.Kind == MutPutHook && (m.Hook.Gadget == "" || m.Hook.Method == "" || m.Hook.Account == "" || m.Hook.Source == "") {
		return errors.New("hook without a gadget, method, account or source")
	}
	return nil
}

// applyHook writes one hook mutation into workspace bucket b and the index. A hook id belongs
// to one workspace: putting an id another workspace indexes is refused.
func applyHook(tx *bolt.Tx, b *bolt.Bucket, ws WorkspaceID, m Mutation) error {
	idx, err := tx.CreateBucketIfNotExists(bucketHookIndex)
	if err != nil {
		return err
	}
	key := []byte(m.Hook.ID)
	var old HookRef
	if err := getJSON(idx, key, &old); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if m.Kind == MutPutHook && old.Workspace != "" && old.Workspace != ws {
		return fmt.Errorf("hook %s belongs to another workspace: %w", m.Hook.ID, ErrConflict)
	}
	if m.Kind == MutDeleteHook {
		if hb := b.Bucket(subHooks); hb != nil {
			if err := hb.Delete(key); err != nil {
				return err
			}
		}
		if old.Workspace == ws {
			return idx.Delete(key)
		}
		return nil
	}
	hb, err := b.CreateBucketIfNotExists(subHooks)
	if err != nil {
		return err
	}
	if err := putJSON(hb, key, *m.Hook); err != nil {
		return err
	}
	return putJSON(idx, key, HookRef{ID: m.Hook.ID, Workspace: ws, Account: m.Hook.Account, Source: m.Hook.Source, Next: m.Hook.Next})
}

// dropHookIndex removes the index entries of workspace bucket b's hooks (the workspace is
// being deleted).
func dropHookIndex(tx *bolt.Tx, b *bolt.Bucket) error {
	idx, hb := tx.Bucket(bucketHookIndex), b.Bucket(subHooks)
	if idx == nil || hb == nil {
		return nil
	}
	var keys [][]byte
	if err := hb.ForEach(func(k, _ []byte) error {
		keys = append(keys, bytes.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Hooks implements WorkspaceStore.
func (w *boltWS) Hooks() ([]Hook, error) {
	return listJSON[Hook](w, subHooks, "read hooks")
}

// HookRef returns hook id's index entry (ErrNotFound when no workspace has it).
func (s *Bolt) HookRef(_ context.Context, id string) (HookRef, error) {
	var ref HookRef
	err := s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketHookIndex)
		if idx == nil {
			return ErrNotFound
		}
		return getJSON(idx, []byte(id), &ref)
	})
	if err != nil {
		return HookRef{}, fmt.Errorf("hook %q: %w", id, err)
	}
	return ref, nil
}

// HookRefs lists the index entries of every hook of the server, in id order.
func (s *Bolt) HookRefs(_ context.Context) ([]HookRef, error) {
	var out []HookRef
	err := s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketHookIndex)
		if idx == nil {
			return nil
		}
		return idx.ForEach(func(k, v []byte) error {
			var ref HookRef
			if err := json.Unmarshal(v, &ref); err != nil {
				return fmt.Errorf("bad hook index entry %q: %w", k, err)
			}
			out = append(out, ref)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list hooks: %w", err)
	}
	return out, nil
}
