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
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketGatekeepers = []byte("gatekeepers")     // id -> GatekeeperRecord
	bucketGKArchives  = []byte("gatekeeperpkgs")  // id -> package archive
	bucketGKAccounts  = []byte("gatekeeperaccts") // id -> GatekeeperAccount
)

// GatekeeperRecord is an installed gatekeeper package, server-wide. ID is the package's
// digest ("sha256:<hex of the archive>"), so the archive is stored content-addressed.
type GatekeeperRecord struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Vendor  string `json:"vendor"`
	Format  string `json:"format"`
	Size    int    `json:"size"`
	// Manifest is the package's manifest.json.
	Manifest json.RawMessage `json:"manifest"`
	By       string          `json:"by"` // the user who installed it
	Created  time.Time       `json:"created"`
	// OAuthClient is the OAuth client the admin configured for a gatekeeper whose manifest
	// declares oauth (nil: none yet).
	OAuthClient *OAuthClient `json:"oauthClient,omitempty"`
}

// OAuthClient is a gatekeeper's OAuth client registration: the client id in clear and the
// client secret sealed by the kernel.
type OAuthClient struct {
	ID     string `json:"id"`
	Sealed []byte `json:"sealed,omitempty"`
}

// GatekeeperAccount is a user's connected account on one gatekeeper: the granted resource
// and the credentials, each sealed by the kernel (the store never sees them in clear).
type GatekeeperAccount struct {
	ID         string            `json:"id"`
	Owner      string            `json:"owner"`
	Gatekeeper string            `json:"gatekeeper"`
	Resource   string            `json:"resource"`
	Sealed     map[string][]byte `json:"sealed"`
	Created    time.Time         `json:"created"`
	// State is "" for a usable account, or AccountReconnect when its OAuth tokens can no
	// longer be refreshed.
	State string `json:"state,omitempty"`
}

// AccountReconnect is the State of an OAuth account whose refresh token the provider refused:
// the user must connect it again.
const AccountReconnect = "reconnect"

// PutGatekeeper stores an installed package with its archive; ErrConflict when it is
// installed already.
func (s *Bolt) PutGatekeeper(_ context.Context, g GatekeeperRecord, archive []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGatekeepers)
		if b.Get([]byte(g.ID)) != nil {
			return fmt.Errorf("gatekeeper %s: %w", g.ID, ErrConflict)
		}
		if err := tx.Bucket(bucketGKArchives).Put([]byte(g.ID), archive); err != nil {
			return err
		}
		return putJSON(b, []byte(g.ID), g)
	})
	if err != nil {
		return fmt.Errorf("put gatekeeper: %w", err)
	}
	return nil
}

// Gatekeepers lists the installed packages in ID order.
func (s *Bolt) Gatekeepers(_ context.Context) ([]GatekeeperRecord, error) {
	var out []GatekeeperRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketGatekeepers), func(g GatekeeperRecord) error {
			out = append(out, g)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list gatekeepers: %w", err)
	}
	return out, nil
}

// Gatekeeper returns an installed package's record and archive.
func (s *Bolt) Gatekeeper(_ context.Context, id string) (GatekeeperRecord, []byte, error) {
	var (
		g       GatekeeperRecord
		archive []byte
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		if err := getJSON(tx.Bucket(bucketGatekeepers), []byte(id), &g); err != nil {
			return err
		}
		archive = bytes.Clone(tx.Bucket(bucketGKArchives).Get([]byte(id)))
		return nil
	})
	if err != nil {
		return GatekeeperRecord{}, nil, fmt.Errorf("gatekeeper %s: %w", id, err)
	}
	return g, archive, nil
}

// DeleteGatekeeper removes an installed package, its archive and every account connected
// to it.
func (s *Bolt) DeleteGatekeeper(_ context.Context, id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGatekeepers)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		var accounts [][]byte
		err := forEachJSON(tx.Bucket(bucketGKAccounts), func(a GatekeeperAccount) error {
			if a.Gatekeeper == id {
				accounts = append(accounts, []byte(a.ID))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, a := range accounts {
			if err := tx.Bucket(bucketGKAccounts).Delete(a); err != nil {
				return err
			}
			if err := deleteAccountState(tx, a); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketGKArchives).Delete([]byte(id)); err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete gatekeeper %s: %w", id, err)
	}
	return nil
}

// PutAccount stores a new connected account; its gatekeeper must be installed.
func (s *Bolt) PutAccount(_ context.Context, a GatekeeperAccount) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketGatekeepers).Get([]byte(a.Gatekeeper)) == nil {
			return fmt.Errorf("gatekeeper %s: %w", a.Gatekeeper, ErrNotFound)
		}
		b := tx.Bucket(bucketGKAccounts)
		if b.Get([]byte(a.ID)) != nil {
			return ErrConflict
		}
		return putJSON(b, []byte(a.ID), a)
	})
	if err != nil {
		return fmt.Errorf("put account %s: %w", a.ID, err)
	}
	return nil
}

// UpdateAccount replaces the record of an existing account (its sealed values and state);
// ErrNotFound when it is gone. Its kv state is kept.
func (s *Bolt) UpdateAccount(_ context.Context, a GatekeeperAccount) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGKAccounts)
		if b.Get([]byte(a.ID)) == nil {
			return ErrNotFound
		}
		return putJSON(b, []byte(a.ID), a)
	})
	if err != nil {
		return fmt.Errorf("update account %s: %w", a.ID, err)
	}
	return nil
}

// UpdateGatekeeper replaces the record of an installed gatekeeper (its archive is kept);
// ErrNotFound when it is not installed.
func (s *Bolt) UpdateGatekeeper(_ context.Context, g GatekeeperRecord) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGatekeepers)
		if b.Get([]byte(g.ID)) == nil {
			return ErrNotFound
		}
		return putJSON(b, []byte(g.ID), g)
	})
	if err != nil {
		return fmt.Errorf("update gatekeeper %s: %w", g.ID, err)
	}
	return nil
}

// Account returns a connected account.
func (s *Bolt) Account(_ context.Context, id string) (GatekeeperAccount, error) {
	var a GatekeeperAccount
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketGKAccounts), []byte(id), &a) })
	if err != nil {
		return GatekeeperAccount{}, fmt.Errorf("account %s: %w", id, err)
	}
	return a, nil
}

// Accounts lists the accounts of user owner.
func (s *Bolt) Accounts(_ context.Context, owner string) ([]GatekeeperAccount, error) {
	var out []GatekeeperAccount
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketGKAccounts), func(a GatekeeperAccount) error {
			if a.Owner == owner {
				out = append(out, a)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return out, nil
}

// DeleteAccount removes a connected account.
func (s *Bolt) DeleteAccount(_ context.Context, id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGKAccounts)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		if err := deleteAccountState(tx, []byte(id)); err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete account %s: %w", id, err)
	}
	return nil
}

// Sub-buckets of a workspace bucket holding its gatekeeper approval queue. They are created
// by the first commit that writes to them, so workspaces made before them need no migration.
var (
	subGKActions = []byte("gkactions") // big-endian action id -> QueuedAction
	subGKPending = []byte("gkpending") // big-endian action id -> nothing, for each pending action
	subGKRules   = []byte("gkrules")   // owner NUL gatekeeper NUL kind -> ApprovalRule
)

// QueuedAction is one line of a workspace's gatekeeper action log: an observation or an
// action with its decision. IDs are assigned by the queue's writer (the workspace's lease
// holder) and never reused.
type QueuedAction struct {
	ID    uint64 `json:"id"`
	Type  string `json:"type"`  // "observation" or "action"
	State string `json:"state"` // recorded, pending, applied, failed, rejected, reverted
	// Account is the GatekeeperAccount.ID whose gatekeeper instance produced the entry.
	Account  string `json:"account"`
	Package  string `json:"package"`
	Resource string `json:"resource"`
	// Caller is who the gatekeeper session served ("gadget:NAME"); empty outside a session.
	Caller      string `json:"caller,omitempty"`
	Session     uint64 `json:"session,omitempty"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Action fields (zero for observations).
	KindTag          string `json:"kindTag,omitempty"`
	KindLabel        string `json:"kindLabel,omitempty"`
	AutoApprovable   bool   `json:"autoApprovable,omitempty"`
	ImplementsRevert bool   `json:"implementsRevert,omitempty"`
	Payload          string `json:"payload,omitempty"`
	// AutoApproved is set when a rule, not a person, approved the action.
	AutoApproved bool      `json:"autoApproved,omitempty"`
	Result       string    `json:"result,omitempty"`
	Created      time.Time `json:"created"`
}

// ApprovalRule lets a workspace apply, without asking, the auto-approvable actions of kind
// Kind from Owner's accounts on gatekeeper package Gatekeeper.
type ApprovalRule struct {
	Owner      string `json:"owner"`
	Gatekeeper string `json:"gatekeeper"`
	Kind       string `json:"kind"`
}

func (r ApprovalRule) key() []byte { return []byte(r.Owner + "\x00" + r.Gatekeeper + "\x00" + r.Kind) }

func (r ApprovalRule) valid() bool {
	for _, f := range []string{r.Owner, r.Gatekeeper, r.Kind} {
		if f == "" || strings.ContainsRune(f, 0) {
			return false
		}
	}
	return true
}

// PutAction creates or replaces entry a of the workspace's action log.
func PutAction(a QueuedAction) Mutation { return Mutation{Kind: MutPutAction, Action: &a} }

// PutRule adds an auto-approval rule to the workspace (adding one it has is a no-op).
func PutRule(r ApprovalRule) Mutation { return Mutation{Kind: MutPutRule, Rule: &r} }

// DeleteRule withdraws an auto-approval rule (a missing one is not an error).
func DeleteRule(r ApprovalRule) Mutation { return Mutation{Kind: MutDeleteRule, Rule: &r} }

// checkQueue refuses a queue mutation that cannot be applied.
func (m Mutation) checkQueue() error {
	switch m.Kind {
	case MutPutAction:
		if m.Action == nil || m.Action.ID == 0 {
			return errors.New("action mutation without an action id")
		}
	case MutPutRule, MutDeleteRule:
		if m.Rule == nil || !m.Rule.valid() {
			return errors.New("rule mutation without owner, gatekeeper and kind")
		}
	}
	return nil
}

// applyQueue writes one queue mutation into workspace bucket b.
func applyQueue(b *bolt.Bucket, m Mutation) error {
	switch m.Kind {
	case MutPutAction:
		ab, err := b.CreateBucketIfNotExists(subGKActions)
		if err != nil {
			return err
		}
		pb, err := pendingIndex(b)
		if err != nil {
			return err
		}
		key := binary.BigEndian.AppendUint64(nil, m.Action.ID)
		if m.Action.State == StatePending {
			err = pb.Put(key, nil)
		} else {
			err = pb.Delete(key)
		}
		if err != nil {
			return err
		}
		return putJSON(ab, key, *m.Action)
	case MutPutRule:
		rb, err := b.CreateBucketIfNotExists(subGKRules)
		if err != nil {
			return err
		}
		return putJSON(rb, m.Rule.key(), *m.Rule)
	case MutDeleteRule:
		if rb := b.Bucket(subGKRules); rb != nil {
			return rb.Delete(m.Rule.key())
		}
	}
	return nil
}

// StatePending is QueuedAction.State of an action waiting for a decision.
const StatePending = "pending"

// pendingIndex returns the workspace's index of pending actions, creating it on first use
// from the action log (files written before the index have pending actions without it).
func pendingIndex(b *bolt.Bucket) (*bolt.Bucket, error) {
	if pb := b.Bucket(subGKPending); pb != nil {
		return pb, nil
	}
	pb, err := b.CreateBucket(subGKPending)
	if err != nil {
		return nil, err
	}
	ab := b.Bucket(subGKActions)
	if ab == nil {
		return pb, nil
	}
	return pb, ab.ForEach(func(k, v []byte) error {
		var a QueuedAction
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("corrupt action %x: %w", k, err)
		}
		if a.State == StatePending {
			return pb.Put(k, nil)
		}
		return nil
	})
}

// ActionsBefore implements WorkspaceStore.
func (w *boltWS) ActionsBefore(before uint64, limit int) ([]QueuedAction, error) {
	var out []QueuedAction
	err := w.view(func(b *bolt.Bucket) error {
		ab := b.Bucket(subGKActions)
		if ab == nil || limit <= 0 {
			return nil
		}
		c := ab.Cursor()
		k, v := c.Last()
		if before > 0 {
			if k, _ = c.Seek(binary.BigEndian.AppendUint64(nil, before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil && len(out) < limit; k, v = c.Prev() {
			var a QueuedAction
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("corrupt action %x: %w", k, err)
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read action log: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// PendingActions implements WorkspaceStore.
func (w *boltWS) PendingActions() ([]QueuedAction, error) {
	var out []QueuedAction
	err := w.view(func(b *bolt.Bucket) error {
		ab := b.Bucket(subGKActions)
		if ab == nil {
			return nil
		}
		pb := b.Bucket(subGKPending)
		if pb == nil { // a file from before the index: scan the log
			return forEachJSON(ab, func(a QueuedAction) error {
				if a.State == StatePending {
					out = append(out, a)
				}
				return nil
			})
		}
		return pb.ForEach(func(k, _ []byte) error {
			var a QueuedAction
			if err := getJSON(ab, k, &a); err != nil {
				return fmt.Errorf("pending action %x: %w", k, err)
			}
			out = append(out, a)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read pending actions: %w", err)
	}
	return out, nil
}

// Rules implements WorkspaceStore.
func (w *boltWS) Rules() ([]ApprovalRule, error) {
	return listJSON[ApprovalRule](w, subGKRules, "read approval rules")
}
