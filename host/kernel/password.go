package kernel

import (
	"context"
	"encoding/json"

	"atelier/capnweb"
	"atelier/host/auth"
)

// hashPassword encodes a salted argon2id hash of password for the store. It waits for a free
// hash slot (Config.HashLimit) and fails with UNAVAILABLE when none frees up in time.
func (k *Kernel) hashPassword(ctx context.Context, password string) (json.RawMessage, error) {
	capnweb.Unblock(ctx) // a hash takes long: the session's next calls need not wait for it
	h, err := k.hasher.Hash(ctx, remoteHost(ctx), password)
	if err != nil {
		return nil, wrapErr(err, "hash password")
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, wrapErr(err, "hash password")
	}
	return b, nil
}

// checkPassword reports whether password matches a stored hash, for client (the caller's
// address), in a hash slot like hashPassword. Without a hash (unknown user, or a user without password) it costs the same
// one hash and matches nothing, so that timing tells nothing.
func (k *Kernel) checkPassword(ctx context.Context, client string, stored json.RawMessage, password string) (bool, error) {
	var h auth.PasswordHash
	if len(stored) > 0 && json.Unmarshal(stored, &h) != nil {
		h = auth.PasswordHash{}
	}
	return k.hasher.Verify(ctx, client, h, password)
}

// passwordAttempt checks password against the stored hash of username's account (nil: none,
// or an unknown username) for the caller, under the guards: it fails with UNAUTHORIZED while
// the caller must wait ("too many failed attempts", before any hash), or with the message
// wrong when the password does not match.
func (k *Kernel) passwordAttempt(ctx context.Context, what, username string, stored json.RawMessage, password, wrong string) error {
	capnweb.Unblock(ctx) // a check takes long: the session's next calls need not wait for it
	at, err := k.guards.begin(ctx, what, username)
	if err != nil {
		return err
	}
	ok, err := k.checkPassword(ctx, at.addr, stored, password)
	if err != nil {
		at.cancel()
		return wrapErr(err, "%s", what)
	}
	if !ok {
		at.failed()
		return fail(CodeUnauthorized, "%s: %s", what, wrong)
	}
	at.succeeded()
	return nil
}
