package store

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketModels = []byte("models") // id -> Model
	// keyAgentInstructions is meta/agentinstructions: the admin's instructions for every
	// agent of the server, as text (absent: none).
	keyAgentInstructions = []byte("agentinstructions")
)

// Model is a language model configured for the agent: a provider's endpoint and the
// provider's name of the model, with its API key sealed by the kernel (the store never sees
// it in clear). Owner is the user who added it; "" makes it instance-wide (the admin's, for
// every user).
type Model struct {
	ID       string `json:"id"`
	Owner    string `json:"owner"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
	BaseURL  string `json:"baseUrl"`
	Model    string `json:"model"`
	// ContextWindow is the model's context in tokens (0: the agent's default).
	ContextWindow int `json:"contextWindow,omitempty"`
	// SealedKey is the API key sealed by the kernel (nil: the endpoint takes none).
	SealedKey []byte    `json:"sealedKey,omitempty"`
	Created   time.Time `json:"created"`
}

// PutModel implements Store.
func (s *Bolt) PutModel(_ context.Context, m Model) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketModels)
		if b.Get([]byte(m.ID)) != nil {
			return ErrConflict
		}
		return putJSON(b, []byte(m.ID), m)
	})
	if err != nil {
		return fmt.Errorf("put model %s: %w", m.ID, err)
	}
	return nil
}

// Model implements Store.
func (s *Bolt) Model(_ context.Context, id string) (Model, error) {
	var m Model
	err := s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucketModels), []byte(id), &m) })
	if err != nil {
		return Model{}, fmt.Errorf("model %s: %w", id, err)
	}
	return m, nil
}

// Models implements Store.
func (s *Bolt) Models(_ context.Context, owner string) ([]Model, error) {
	var out []Model
	err := s.db.View(func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketModels), func(m Model) error {
			if m.Owner == owner {
				out = append(out, m)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	return out, nil
}

// DeleteModel implements Store.
func (s *Bolt) DeleteModel(_ context.Context, id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketModels)
		if b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete model %s: %w", id, err)
	}
	return nil
}

// AgentInstructions implements Store.
func (s *Bolt) AgentInstructions(_ context.Context) (string, error) {
	var text string
	err := s.db.View(func(tx *bolt.Tx) error {
		text = string(tx.Bucket(bucketMeta).Get(keyAgentInstructions))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read agent instructions: %w", err)
	}
	return text, nil
}

// PutAgentInstructions implements Store.
func (s *Bolt) PutAgentInstructions(_ context.Context, text string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if text == "" {
			return meta.Delete(keyAgentInstructions)
		}
		return meta.Put(keyAgentInstructions, []byte(text))
	})
	if err != nil {
		return fmt.Errorf("store agent instructions: %w", err)
	}
	return nil
}
