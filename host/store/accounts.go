package store

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bootstrap implements Store.
func (s *Bolt) Bootstrap(ctx context.Context, name string, tok Token) (bool, error) {
	return s.BootstrapUser(ctx, User{ID: NewID("u"), Name: name, Created: s.now().UTC()}, tok)
}

// BootstrapUser is Bootstrap with the record of the user to create when none is named
// u.Name, so that a caller that replays it (a replica) makes the same user every time.
func (s *Bolt) BootstrapUser(_ context.Context, u User, tok Token) (bool, error) {
	issued := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keyBootstrapped) != nil {
			return nil
		}
		id := tx.Bucket(bucketUsernames).Get([]byte(u.Name))
		if id == nil {
			if err := putUser(tx, u); err != nil {
				return err
			}
			id = []byte(u.ID)
		}
		tok.UserID = string(id)
		if err := putJSON(tx.Bucket(bucketTokens), []byte(tok.Hash), tok); err != nil {
			return err
		}
		issued = true
		return meta.Put(keyBootstrapped, []byte("1"))
	})
	if err != nil {
		return false, fmt.Errorf("bootstrap user %s: %w", u.Name, err)
	}
	return issued, nil
}

func putUser(tx *bolt.Tx, u User) error {
	if err := tx.Bucket(bucketUsernames).Put([]byte(u.Name), []byte(u.ID)); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketUsers), []byte(u.ID), u)
}

// CreateUser implements Store.
func (s *Bolt) CreateUser(_ context.Context, u User) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketUsernames).Get([]byte(u.Name)) != nil {
			return fmt.Errorf("username %q: %w", u.Name, ErrConflict)
		}
		return putUser(tx, u)
	})
	if err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	return nil
}

// PutUser implements Store.
func (s *Bolt) PutUser(_ context.Context, u User) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		var old User
		if err := getJSON(tx.Bucket(bucketUsers), []byte(u.ID), &old); err != nil {
			return err
		}
		if old.Name != u.Name {
			return errors.New("a user's name cannot change")
		}
		return putUser(tx, u)
	})
	if err != nil {
		return fmt.Errorf("update user %s: %w", u.ID, err)
	}
	return nil
}

// User implements Store.
func (s *Bolt) User(_ context.Context, id string) (User, error) {
	var u User
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketUsers), []byte(id), &u) })
	if err != nil {
		return User{}, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// UserByName implements Store.
func (s *Bolt) UserByName(_ context.Context, name string) (User, error) {
	var u User
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketUsernames).Get([]byte(name))
		if id == nil {
			return ErrNotFound
		}
		return getJSON(tx.Bucket(bucketUsers), id, &u)
	})
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", name, err)
	}
	return u, nil
}

// PutToken implements Store.
func (s *Bolt) PutToken(_ context.Context, t Token) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return putJSON(tx.Bucket(bucketTokens), []byte(t.Hash), t) })
	if err != nil {
		return fmt.Errorf("store token: %w", err)
	}
	return nil
}

// Token implements Store.
func (s *Bolt) Token(_ context.Context, hash string) (Token, error) {
	var t Token
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketTokens), []byte(hash), &t) })
	if err != nil {
		return Token{}, fmt.Errorf("token: %w", err)
	}
	return t, nil
}

// DeleteToken implements Store.
func (s *Bolt) DeleteToken(_ context.Context, hash string) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTokens).Delete([]byte(hash)) })
	if err != nil {
		return fmt.Errorf("delete token: %w", err)
	}
	return nil
}

// PutAgent implements Store.
func (s *Bolt) PutAgent(_ context.Context, a Agent, t Token) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := putJSON(tx.Bucket(bucketTokens), []byte(t.Hash), t); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketAgents), []byte(a.ID), a)
	})
	if err != nil {
		return fmt.Errorf("store agent %s: %w", a.Name, err)
	}
	return nil
}

// Agent implements Store.
func (s *Bolt) Agent(_ context.Context, id string) (Agent, error) {
	var a Agent
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketAgents), []byte(id), &a) })
	if err != nil {
		return Agent{}, fmt.Errorf("agent %s: %w", id, err)
	}
	return a, nil
}

// Agents implements Store.
func (s *Bolt) Agents(_ context.Context, owner string) ([]Agent, error) {
	var out []Agent
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketAgents), func(a Agent) error {
			if a.Owner == owner {
				out = append(out, a)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	return out, nil
}

// DeleteAgent implements Store.
func (s *Bolt) DeleteAgent(_ context.Context, id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		var a Agent
		if err := getJSON(tx.Bucket(bucketAgents), []byte(id), &a); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTokens).Delete([]byte(a.TokenHash)); err != nil {
			return err
		}
		return tx.Bucket(bucketAgents).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	return nil
}

// PutBlueprint implements Store.
func (s *Bolt) PutBlueprint(_ context.Context, b Blueprint, code []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if sha := CodeSHA(code); sha != b.SHA256 {
			return fmt.Errorf("the code's sha256 is %s, the record says %s", sha, b.SHA256)
		}
		if err := putCode(tx, b.SHA256, code); err != nil {
			return err
		}
		var old Blueprint
		if err := getJSON(tx.Bucket(bucketBlueprints), []byte(b.ID), &old); err == nil {
			return fmt.Errorf("blueprint id %s: %w", b.ID, ErrConflict)
		}
		if err := addRef(tx, b.SHA256, 1); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketBlueprints), []byte(b.ID), b)
	})
	if err != nil {
		return fmt.Errorf("store blueprint %s: %w", b.Title, err)
	}
	return nil
}

// Blueprint implements Store.
func (s *Bolt) Blueprint(_ context.Context, id string) (Blueprint, error) {
	var b Blueprint
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketBlueprints), []byte(id), &b) })
	if err != nil {
		return Blueprint{}, fmt.Errorf("blueprint %s: %w", id, err)
	}
	return b, nil
}

// Blueprints implements Store.
func (s *Bolt) Blueprints(_ context.Context, owner string) ([]Blueprint, error) {
	var out []Blueprint
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketBlueprints), func(b Blueprint) error {
			if b.Owner == owner {
				out = append(out, b)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list blueprints: %w", err)
	}
	return out, nil
}
