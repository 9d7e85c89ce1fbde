package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrClosed is returned by a Bolt after Close.
var ErrClosed = errors.New("store closed")

// CreateWorkspace implements Store.
func (s *Bolt) CreateWorkspace(_ context.Context, w Workspace) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return createWorkspace(tx, w) })
	if err != nil {
		return fmt.Errorf("create workspace %s: %w", w.Name, err)
	}
	return nil
}

func createWorkspace(tx *bolt.Tx, w Workspace) error {
	if tx.Bucket(bucketWorkspaces).Get([]byte(w.ID)) != nil {
		return fmt.Errorf("workspace id %s: %w", w.ID, ErrConflict)
	}
	b, err := tx.Bucket(bucketWS).CreateBucket([]byte(w.ID))
	if err != nil {
		return err
	}
	for _, sub := range [][]byte{subGadgets, subState, subAudit, subUsage} {
		if _, err := b.CreateBucket(sub); err != nil {
			return err
		}
	}
	return putWorkspace(tx, w)
}

// members returns the users with access to w and their roles.
func members(w Workspace) map[string]Role {
	m := map[string]Role{w.Owner: RoleOwner}
	for _, c := range w.Collaborators {
		if c.UserID != w.Owner {
			m[c.UserID] = c.Role
		}
	}
	return m
}

// putWorkspace stores w and brings the access index in line with its members.
func putWorkspace(tx *bolt.Tx, w Workspace) error {
	var old Workspace
	if err := getJSON(tx.Bucket(bucketWorkspaces), []byte(w.ID), &old); err == nil {
		if err := dropAccess(tx, old); err != nil {
			return err
		}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	for user, role := range members(w) {
		ub, err := tx.Bucket(bucketAccess).CreateBucketIfNotExists([]byte(user))
		if err != nil {
			return err
		}
		if err := ub.Put([]byte(w.ID), []byte(role)); err != nil {
			return err
		}
	}
	return putJSON(tx.Bucket(bucketWorkspaces), []byte(w.ID), w)
}

func dropAccess(tx *bolt.Tx, w Workspace) error {
	for user := range members(w) {
		if ub := tx.Bucket(bucketAccess).Bucket([]byte(user)); ub != nil {
			if err := ub.Delete([]byte(w.ID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Workspaces implements Store.
func (s *Bolt) Workspaces(_ context.Context, user string) ([]Access, error) {
	var out []Access
	err := s.db.View(func(tx *bolt.Tx) error {
		ub := tx.Bucket(bucketAccess).Bucket([]byte(user))
		if ub == nil {
			return nil
		}
		return ub.ForEach(func(k, v []byte) error {
			out = append(out, Access{Workspace: WorkspaceID(k), Role: Role(v)})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	return out, nil
}

// lease is a Bolt workspace lease: its epoch is the one stored in ws/<id>/epoch when it was
// acquired.
type lease struct {
	s     *Bolt
	ws    WorkspaceID
	epoch Epoch
	lost  chan struct{}
	once  sync.Once
}

func (l *lease) Epoch() Epoch          { return l.epoch }
func (l *lease) Lost() <-chan struct{} { return l.lost }
func (l *lease) lose()                 { l.once.Do(func() { close(l.lost) }) }

func (l *lease) isLost() bool {
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// Release implements Lease.
func (l *lease) Release(context.Context) error {
	l.s.mu.Lock()
	if l.s.leases[l.ws] == l {
		delete(l.s.leases, l.ws)
	}
	l.s.mu.Unlock()
	l.lose()
	return nil
}

// Acquire implements Placement: it bumps the workspace's epoch in the file, so that a previous
// holder's commits are fenced, and the previous lease of this process is lost.
func (s *Bolt) Acquire(_ context.Context, ws WorkspaceID) (Lease, error) {
	var epoch Epoch
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWS).Bucket([]byte(ws))
		if b == nil {
			return ErrNotFound
		}
		epoch = readEpoch(b) + 1
		return b.Put(keyEpoch, binary.BigEndian.AppendUint64(nil, uint64(epoch)))
	})
	if err != nil {
		return nil, fmt.Errorf("acquire workspace %s: %w", ws, err)
	}
	l := &lease{s: s, ws: ws, epoch: epoch, lost: make(chan struct{})}
	s.mu.Lock()
	old := s.leases[ws]
	s.leases[ws] = l
	s.mu.Unlock()
	if old != nil {
		old.lose()
	}
	return l, nil
}

// Lookup implements Placement.
func (s *Bolt) Lookup(_ context.Context, ws WorkspaceID) (NodeID, Epoch, error) {
	var epoch Epoch
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWS).Bucket([]byte(ws))
		if b == nil {
			return ErrNotFound
		}
		epoch = readEpoch(b)
		return nil
	})
	if err != nil {
		return "", 0, fmt.Errorf("look up workspace %s: %w", ws, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[ws] == nil {
		return "", epoch, nil
	}
	return s.node, epoch, nil
}

func readEpoch(b *bolt.Bucket) Epoch {
	v := b.Get(keyEpoch)
	if len(v) != 8 {
		return 0
	}
	return Epoch(binary.BigEndian.Uint64(v))
}

// Open implements Store. The lease must come from this Bolt's Acquire.
func (s *Bolt) Open(_ context.Context, ws WorkspaceID, l Lease) (WorkspaceStore, error) {
	bl, ok := l.(*lease)
	if !ok || bl.s != s || bl.ws != ws {
		return nil, fmt.Errorf("open workspace %s: the lease is not this store's lease for it", ws)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketWS).Bucket([]byte(ws)) == nil {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, err)
	}
	return &boltWS{s: s, id: ws, lease: bl}, nil
}

// boltWS is a WorkspaceStore of a Bolt.
type boltWS struct {
	s     *Bolt
	id    WorkspaceID
	lease *lease
}

func (w *boltWS) view(fn func(b *bolt.Bucket) error) error {
	return w.s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWS).Bucket([]byte(w.id))
		if b == nil {
			return fmt.Errorf("workspace %s: %w", w.id, ErrNotFound)
		}
		return fn(b)
	})
}

// Workspace implements WorkspaceStore.
func (w *boltWS) Workspace() (Workspace, error) { return w.s.Workspace(context.Background(), w.id) }

// Workspace implements Store.
func (s *Bolt) Workspace(_ context.Context, id WorkspaceID) (Workspace, error) {
	var out Workspace
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketWorkspaces), []byte(id), &out) })
	if err != nil {
		return Workspace{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	return out, nil
}

// Gadgets implements WorkspaceStore.
func (w *boltWS) Gadgets() ([]Gadget, error) {
	var out []Gadget
	err := w.view(func(b *bolt.Bucket) error {
		return forEachJSON(b.Bucket(subGadgets), func(g Gadget) error {
			out = append(out, g)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list gadgets: %w", err)
	}
	slices.SortFunc(out, func(a, b Gadget) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get implements WorkspaceStore.
func (w *boltWS) Get(g GadgetID, key []byte) ([]byte, bool, error) {
	var val []byte
	var ok bool
	err := w.view(func(b *bolt.Bucket) error {
		if st := b.Bucket(subState).Bucket([]byte(g)); st != nil {
			if v := st.Get(key); v != nil {
				val, ok = bytes.Clone(v), true
			}
		}
		return nil
	})
	return val, ok, err
}

// List implements WorkspaceStore.
func (w *boltWS) List(g GadgetID, prefix []byte, fn func(k, v []byte) bool) error {
	return w.view(func(b *bolt.Bucket) error {
		st := b.Bucket(subState).Bucket([]byte(g))
		if st == nil {
			return nil
		}
		c := st.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if !fn(k, v) {
				break
			}
		}
		return nil
	})
}

// Audit implements WorkspaceStore. Entries that cannot match are passed over on their bytes,
// without decoding them, so a filter costs about one read of the retained log.
func (w *boltWS) Audit(q AuditQuery) ([]AuditEntry, error) {
	var actor, action []byte
	if q.Actor != "" {
		actor = append([]byte(`"actor":`), jsonString(q.Actor)...)
	}
	if q.Action != "" {
		quoted := jsonString(q.Action)
		action = append([]byte(`"action":`), quoted[:len(quoted)-1]...) // open: a prefix
	}
	var out []AuditEntry
	err := w.view(func(b *bolt.Bucket) error {
		c := b.Bucket(subAudit).Cursor()
		k, v := c.Last()
		if q.Before != 0 {
			if k, v = c.Seek(binary.BigEndian.AppendUint64(nil, q.Before)); k == nil {
				k, v = c.Last()
			}
			for k != nil && binary.BigEndian.Uint64(k) >= q.Before {
				k, v = c.Prev()
			}
		}
		for ; k != nil && len(out) < q.Limit; k, v = c.Prev() {
			if (actor != nil && !bytes.Contains(v, actor)) || (action != nil && !bytes.Contains(v, action)) {
				continue
			}
			var e AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("corrupt audit entry: %w", err)
			}
			if (q.Actor == "" || e.Actor == q.Actor) && strings.HasPrefix(e.Action, q.Action) {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}

// jsonString is s as encoding/json writes it in a value.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// Close implements WorkspaceStore; the lease is the caller's to release.
func (w *boltWS) Close() error { return nil }

// migrateV1 moves the preview's single set of gadgets into a workspace "default" owned by the
// user "admin" (created without a password; the first-run token is issued to it).
func migrateV1(tx *bolt.Tx, now time.Time) error {
	var admin User
	if id := tx.Bucket(bucketUsernames).Get([]byte("admin")); id != nil {
		if err := getJSON(tx.Bucket(bucketUsers), id, &admin); err != nil {
			return err
		}
	} else {
		admin = User{ID: NewID("u"), Name: "admin", Created: now}
		if err := putUser(tx, admin); err != nil {
			return err
		}
	}
	ws := Workspace{ID: WorkspaceID(NewID("ws")), Name: "default", Owner: admin.ID, Created: now}
	if err := createWorkspace(tx, ws); err != nil {
		return err
	}
	wb := tx.Bucket(bucketWS).Bucket([]byte(ws.ID))
	oldGadgets, oldState := tx.Bucket([]byte("gadgets")), tx.Bucket([]byte("state"))
	if oldGadgets == nil {
		return nil
	}
	err := forEachJSON(oldGadgets, func(old struct {
		Name     string    `json:"name"`
		Grants   []string  `json:"grants"`
		Versions []Version `json:"versions"`
		Current  int       `json:"current"`
	}) error {
		g := Gadget{ID: GadgetID(NewID("g")), Name: old.Name, Grants: old.Grants, Versions: old.Versions, Current: old.Current, Created: now}
		if len(old.Versions) > 0 {
			g.Created = old.Versions[0].Created
		}
		if err := putJSON(wb.Bucket(subGadgets), []byte(g.ID), g); err != nil {
			return err
		}
		st, err := wb.Bucket(subState).CreateBucket([]byte(g.ID))
		if err != nil {
			return err
		}
		if oldState == nil || oldState.Bucket([]byte(old.Name)) == nil {
			return nil
		}
		return oldState.Bucket([]byte(old.Name)).ForEach(func(k, v []byte) error { return st.Put(k, v) })
	})
	if err != nil {
		return err
	}
	if err := tx.DeleteBucket([]byte("gadgets")); err != nil {
		return err
	}
	if oldState != nil {
		return tx.DeleteBucket([]byte("state"))
	}
	return nil
}
