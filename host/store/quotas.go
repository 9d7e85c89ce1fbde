package store

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"atelier/host/quota"
)

// keyQuotas is meta/quotas: the JSON quota.Limits the admin set (no migration: absent means
// none set).
var keyQuotas = []byte("quotas")

// Quotas implements Store.
func (s *Bolt) Quotas(_ context.Context) (quota.Limits, error) {
	var l quota.Limits
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketMeta), keyQuotas, &l) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		return quota.Limits{}, fmt.Errorf("read quotas: %w", err)
	}
	return l, nil
}

// PutQuotas implements Store.
func (s *Bolt) PutQuotas(_ context.Context, l quota.Limits) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return putJSON(tx.Bucket(bucketMeta), keyQuotas, l) })
	if err != nil {
		return fmt.Errorf("store quotas: %w", err)
	}
	return nil
}

// UserUsage implements Store. It reads, in one transaction, the access index of user and the
// workspaces it owns (their gadget records, schedules and usage counters), and the agents,
// gatekeeper accounts, models and blueprints of user: nothing of other users' workspaces.
func (s *Bolt) UserUsage(_ context.Context, user string) (quota.Limits, error) {
	var u quota.Limits
	err := s.db.View(func(tx *bolt.Tx) error {
		if ub := tx.Bucket(bucketAccess).Bucket([]byte(user)); ub != nil {
			err := ub.ForEach(func(id, role []byte) error {
				if Role(role) != RoleOwner {
					return nil
				}
				u.Workspaces++
				return wsUsage(tx.Bucket(bucketWS).Bucket(id), &u)
			})
			if err != nil {
				return err
			}
		}
		err := forEachJSON(tx.Bucket(bucketAgents), func(a Agent) error {
			u.Agents += count(a.Owner == user)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEachJSON(tx.Bucket(bucketGKAccounts), func(a GatekeeperAccount) error {
			u.Accounts += count(a.Owner == user)
			return nil
		})
		if err != nil {
			return err
		}
		err = forEachJSON(tx.Bucket(bucketModels), func(m Model) error {
			u.Models += count(m.Owner == user)
			return nil
		})
		if err != nil {
			return err
		}
		return forEachJSON(tx.Bucket(bucketBlueprints), func(b Blueprint) error {
			if b.Owner == user {
				u.StoredBytes += int64(b.Size)
			}
			return nil
		})
	})
	if err != nil {
		return quota.Limits{}, fmt.Errorf("usage of user %s: %w", user, err)
	}
	return u, nil
}

// wsUsage adds what the workspace bucket b holds to u: its gadgets, their code versions and
// state, and its schedules.
func wsUsage(b *bolt.Bucket, u *quota.Limits) error {
	if b == nil {
		return nil
	}
	err := forEachJSON(b.Bucket(subGadgets), func(g Gadget) error {
		u.Gadgets++
		for _, v := range g.Versions {
			u.StoredBytes += int64(v.Size)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := b.Bucket(subUsage).ForEach(func(_, v []byte) error {
		u.StoredBytes += getUint(v)
		return nil
	}); err != nil {
		return err
	}
	if sb := b.Bucket(subSchedules); sb != nil {
		return sb.ForEach(func(_, _ []byte) error {
			u.Schedules++
			return nil
		})
	}
	return nil
}

// count is 1 for true, 0 for false.
func count(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
