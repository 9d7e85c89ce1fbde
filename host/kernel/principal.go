package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"atelier/host/auth"
	"atelier/host/store"
)

// principal is who a session authenticated as: a user, or an agent of a user.
type principal struct {
	k        *Kernel
	userID   string
	username string
	agent    *store.Agent // nil for a user
	// chat is set for a chat's agent run acting as the user (forChat): it has no token of its
	// own, and its role is the user's, checked again on every call.
	chat    string
	expires time.Time // zero: never
	hash    string    // the token's hash
	// checked is the kernel's revocation count when the token was last found in the store;
	// revoked is set once it was not.
	checked atomic.Uint64
	revoked atomic.Bool
}

// authenticate turns a token into a principal. Every failure is UNAUTHORIZED.
func (k *Kernel) authenticate(ctx context.Context, token string) (*principal, error) {
	hash, err := auth.CheckToken(token)
	if err != nil {
		return nil, fail(CodeUnauthorized, "authenticate: %v", err)
	}
	return k.principalOf(ctx, hash)
}

// principalOf is the principal of the token whose hash is given (authenticate, and a peer
// node acting for a client of its own: PeerMain).
func (k *Kernel) principalOf(ctx context.Context, hash string) (*principal, error) {
	gen := k.revocations.Load() // before the lookup: a revocation after it is seen later
	t, err := k.st.Token(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fail(CodeUnauthorized, "authenticate: unknown or revoked token; log in again")
	} else if err != nil {
		return nil, wrapErr(err, "authenticate")
	}
	if !auth.Equal(t.Hash, hash) {
		return nil, fail(CodeUnauthorized, "authenticate: unknown token")
	}
	if !t.Expires.IsZero() && k.cfg.Now().After(t.Expires) {
		return nil, fail(CodeUnauthorized, "authenticate: the token expired; log in again")
	}
	u, err := k.st.User(ctx, t.UserID)
	if err != nil {
		return nil, fail(CodeUnauthorized, "authenticate: the token's user no longer exists")
	}
	p := &principal{k: k, userID: u.ID, username: u.Name, expires: t.Expires, hash: hash}
	p.checked.Store(gen)
	if t.AgentID != "" {
		a, err := k.st.Agent(ctx, t.AgentID)
		if err != nil {
			return nil, fail(CodeUnauthorized, "authenticate: the agent was revoked")
		}
		p.agent = &a
	}
	return p, nil
}

// check refuses a principal whose token was revoked or expired since it authenticated. It
// costs an atomic load, and a store lookup once after each revocation in the kernel.
func (p *principal) check() error {
	if p.chat != "" {
		return nil // no token: the run lives while the user keeps access (chatState.recheck)
	}
	if gen := p.k.revocations.Load(); gen != p.checked.Load() && !p.revoked.Load() {
		_, err := p.k.st.Token(context.Background(), p.hash)
		switch {
		case errors.Is(err, store.ErrNotFound):
			p.revoked.Store(true)
		case err != nil:
			return wrapErr(err, "check the session's token")
		default:
			p.checked.Store(gen)
		}
	}
	if p.revoked.Load() {
		return fail(CodeUnauthorized, "this session's token was revoked; log in again")
	}
	if !p.expires.IsZero() && p.k.cfg.Now().After(p.expires) {
		return fail(CodeUnauthorized, "this session's token expired; log in again")
	}
	return nil
}

// name is how the principal appears in audit logs.
func (p *principal) name() string {
	if p.agent != nil {
		return p.username + "/agent:" + p.agent.Name
	}
	if p.chat != "" {
		return p.username + "/chat:" + p.chat
	}
	return p.username
}

// forChat returns the principal of an agent run in chat, acting as user p: the user's role,
// re-checked on every call, and no token (so revoking the user's sessions does not end the
// run, but losing access to the workspace does).
func (p *principal) forChat(chat string) *principal {
	return &principal{k: p.k, userID: p.userID, username: p.username, chat: chat}
}

// admin reports whether p is the user admin, the server's operator (not one of its agents).
func (p *principal) admin() bool { return p.agent == nil && p.chat == "" && p.username == AdminName }

// roleIn returns the principal's role in workspace w, or an error: FORBIDDEN without access.
func (p *principal) roleIn(w store.Workspace) (store.Role, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	role := store.Role("")
	if w.Owner == p.userID {
		role = store.RoleOwner
	}
	for _, c := range w.Collaborators {
		if c.UserID == p.userID {
			role = c.Role
		}
	}
	if !role.Valid() {
		return "", noWorkspace(w.ID)
	}
	if p.agent != nil {
		e, ok := p.agent.Scope.Workspaces[w.ID]
		if !ok {
			return "", fail(CodeForbidden, "agent %s may not use workspace %s (outside its scope)", p.agent.Name, w.ID)
		}
		role = role.Min(e.Role)
	}
	return role, nil
}

// errNoWorkspace marks the refusal of a workspace that does not exist or that the caller may
// not use: both say the same, so that an outsider cannot tell which.
var errNoWorkspace = errors.New("no such workspace for the caller")

// noWorkspace refuses workspace id to a caller that may not use it, or when it does not exist.
func noWorkspace(id store.WorkspaceID) error {
	return &Error{Code: CodeForbidden, Err: errNoWorkspace,
		Msg: fmt.Sprintf("you have no access to workspace %s: it does not exist, or its owner has not added you (check the id with listWorkspaces or `atelier workspace list`, or ask the owner to add you)", id)}
}

// openFailed gives err, the failure to open workspace id, the context "open workspace id"
// unless its message names the workspace already (as the refusal of a node that runs it does).
func openFailed(err error, id store.WorkspaceID) error {
	if err == nil || errors.Is(err, errNoWorkspace) || strings.Contains(err.Error(), string(id)) {
		return err
	}
	return wrapErr(err, "open workspace %s", id)
}

// gadgetAllowed reports whether an agent's scope for ws covers gadget name (always true for
// users).
func (p *principal) gadgetAllowed(ws store.WorkspaceID, name string) bool {
	if p.agent == nil {
		return true
	}
	e := p.agent.Scope.Workspaces[ws]
	return slices.Contains(e.Gadgets, "*") || slices.Contains(e.Gadgets, name)
}

// checkGadget refuses an agent outside its gadget subset.
func (p *principal) checkGadget(ws store.WorkspaceID, name string) error {
	if !p.gadgetAllowed(ws, name) {
		return fail(CodeForbidden, "agent %s may not use gadget %s (outside its scope)", p.agent.Name, name)
	}
	return nil
}
