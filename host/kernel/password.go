package kernel

import (
	"encoding/json"

	"atelier/host/auth"
)

// hashPassword encodes a salted argon2id hash of password for the store.
func (k *Kernel) hashPassword(password string) (json.RawMessage, error) {
	h, err := auth.HashPassword(password, k.cfg.Password)
	if err != nil {
		return nil, wrapErr(err, "hash password")
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, wrapErr(err, "hash password")
	}
	return b, nil
}

// verifyPassword checks password against a stored hash. Without a hash (unknown user, or a
// user without password) it still spends one hash's time, so that timing tells nothing.
func (k *Kernel) verifyPassword(stored json.RawMessage, password string) bool {
	var h auth.PasswordHash
	if len(stored) == 0 || json.Unmarshal(stored, &h) != nil {
		dummy, _ := auth.HashPassword(password, k.cfg.Password)
		dummy.Verify(password + "x")
		return false
	}
	return h.Verify(password)
}
