package kernel

import (
	"context"
	"errors"
	"time"
	"unicode"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/store"
)

// Public is the main object of every Cap'n Web session (docs/api.md, "Public API"): sign up,
// log in, and authenticate(token) for everything else.
type Public struct {
	capnweb.Target
	k *Kernel
}

// NewPublic returns the main object of a new session.
func NewPublic(k *Kernel) *Public { return &Public{k: k} }

// Ping returns "pong".
func (*Public) Ping() string { return "pong" }

// ServerInfo describes the server: name, version, whether signup() is open, and whether it is
// a node of a cluster (the shell shows the admin its cluster screen then).
func (p *Public) ServerInfo() map[string]any {
	return map[string]any{"name": "atelier", "version": p.k.cfg.Version, "signupsEnabled": !p.k.cfg.SignupsDisabled, "cluster": p.k.cfg.Cluster != nil}
}

// Signup creates a user and returns a session token.
func (p *Public) Signup(ctx context.Context, username, password string) (string, error) {
	k := p.k
	if k.cfg.SignupsDisabled {
		return "", fail(CodeFailedPrecondition, "signup: signups are disabled on this server")
	}
	if err := validUsername(username); err != nil {
		return "", err
	}
	if err := validPassword(password); err != nil {
		return "", err
	}
	if err := k.guards.signup(ctx); err != nil {
		return "", err
	}
	pw, err := k.hashPassword(ctx, password)
	if err != nil {
		k.guards.refundSignup(ctx)
		return "", err
	}
	u := store.User{ID: store.NewID("u"), Name: username, Password: pw, Created: time.Now().UTC()}
	if err := k.st.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", fail(CodeConflict, "signup: username %q is taken; pick another", username)
		}
		return "", wrapErr(err, "signup")
	}
	return k.newSession(ctx, u.ID)
}

// Login checks a password and returns a new session token. An unknown username costs the
// same one password hash as a wrong password and gets the same answer.
func (p *Public) Login(ctx context.Context, username, password string) (string, error) {
	k := p.k
	if err := validUsername(username); err != nil {
		return "", err
	}
	u, err := k.st.UserByName(ctx, username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", wrapErr(err, "login")
	}
	if err := k.passwordAttempt(ctx, "login", username, u.Password, password, "wrong username or password"); err != nil {
		return "", err
	}
	return k.newSession(ctx, u.ID)
}

// Authenticate returns the authenticated API for a session, agent or admin token.
func (p *Public) Authenticate(ctx context.Context, token string) (*Authed, error) {
	pr, err := p.k.authenticateAt(ctx, token, remoteHost(ctx))
	if err != nil {
		return nil, err
	}
	return &Authed{k: p.k, p: pr}, nil
}

// authenticateAt authenticates a token presented from addr. A refused token counts against
// addr, and while addr must wait, refused tokens get the wait; a valid token never waits.
func (k *Kernel) authenticateAt(ctx context.Context, token, addr string) (*principal, error) {
	pr, err := k.authenticate(ctx, token)
	var ke *Error
	if errors.As(err, &ke) && ke.Code == CodeUnauthorized {
		return nil, k.guards.badToken(addr, err)
	}
	return pr, err
}

// newSession stores and returns a fresh session token for user id.
func (k *Kernel) newSession(ctx context.Context, userID string) (string, error) {
	tok, hash, err := auth.NewToken()
	if err != nil {
		return "", wrapErr(err, "new session")
	}
	now := k.cfg.Now().UTC()
	if err := k.st.PutToken(ctx, store.Token{Hash: hash, UserID: userID, Created: now, Expires: now.Add(k.cfg.SessionTTL)}); err != nil {
		return "", wrapErr(err, "new session")
	}
	return tok, nil
}

func validUsername(name string) error {
	ok := len(name) >= 1 && len(name) <= 32 && name[0] >= 'a' && name[0] <= 'z'
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}
	if !ok {
		return fail(CodeInvalidArgument, "username %.40q: use 1 to 32 of a-z, 0-9, '-' and '_', starting with a letter", name)
	}
	return nil
}

func validPassword(pw string) error {
	if len(pw) < 8 || len(pw) > 1024 {
		return fail(CodeInvalidArgument, "password: want 8 to 1024 bytes, got %d", len(pw))
	}
	return nil
}

// validName accepts gadget names that are safe in URLs, logs and file names.
func validName(what, name string) error {
	ok := name != "" && len(name) <= 64
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}
	if !ok {
		return fail(CodeInvalidArgument, "%s name %.70q: use 1 to 64 lowercase letters, digits, '-' and '_'", what, name)
	}
	return nil
}

// validTitle accepts human-readable names and titles: 1 to max bytes, no control characters.
func validTitle(what, s string, max int) error {
	ok := s != "" && len(s) <= max
	for _, r := range s {
		ok = ok && !unicode.IsControl(r)
	}
	if !ok {
		return fail(CodeInvalidArgument, "%s %.70q: want 1 to %d bytes without control characters", what, s, max)
	}
	return nil
}
