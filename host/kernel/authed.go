package kernel

import (
	"context"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/quota"
	"atelier/host/store"
)

// Authed is the authenticated API (docs/api.md): what a user or agent reaches with a token.
// Every method checks first that the token still holds.
type Authed struct {
	capnweb.Target
	k *Kernel
	p *principal
	// peer is set for the API another node uses for its client (PeerMain): its workspace
	// objects are this node's own, never routed again.
	peer bool
}

// Whoami describes the caller: {id, username, kind: "user"|"agent", owner?}.
func (a *Authed) Whoami() (map[string]any, error) {
	if err := a.p.check(); err != nil {
		return nil, err
	}
	if a.p.agent != nil {
		return map[string]any{"id": a.p.agent.ID, "username": a.p.agent.Name, "kind": "agent", "owner": a.p.username}, nil
	}
	return map[string]any{"id": a.p.userID, "username": a.p.username, "kind": "user"}, nil
}

// Logout revokes the token this session authenticated with.
func (a *Authed) Logout(ctx context.Context) error {
	if err := a.p.check(); err != nil {
		return err
	}
	return a.k.revokeToken(ctx, a.p.hash)
}

// ChangePassword replaces the caller's password (users only). A user without a password (the
// bootstrap admin) passes "" as old.
func (a *Authed) ChangePassword(ctx context.Context, old, new string) error {
	if err := a.userOnly("changePassword"); err != nil {
		return err
	}
	if err := validPassword(new); err != nil {
		return err
	}
	u, err := a.k.st.User(ctx, a.p.userID)
	if err != nil {
		return wrapErr(err, "change password")
	}
	if len(u.Password) > 0 || old != "" {
		if err := a.k.passwordAttempt(ctx, "change password", u.Name, u.Password, old, "the old password is wrong"); err != nil {
			return err
		}
	}
	if u.Password, err = a.k.hashPassword(ctx, new); err != nil {
		return err
	}
	return wrapErr(a.k.st.PutUser(ctx, u), "change password")
}

// userOnly refuses agents.
func (a *Authed) userOnly(what string) error {
	if err := a.p.check(); err != nil {
		return err
	}
	if a.p.agent != nil {
		return fail(CodeForbidden, "%s: agents may not do this; use the owner's account", what)
	}
	return nil
}

// WorkspaceInfo describes a workspace to its users.
type WorkspaceInfo struct {
	ID    store.WorkspaceID `json:"id"`
	Name  string            `json:"name"`
	Owner string            `json:"owner"`
	Role  store.Role        `json:"role"`
}

// ListWorkspaces lists the workspaces the caller owns or collaborates on (for an agent: those
// in its scope, with the narrower role).
func (a *Authed) ListWorkspaces(ctx context.Context) ([]WorkspaceInfo, error) {
	if err := a.p.check(); err != nil {
		return nil, err
	}
	acc, err := a.k.st.Workspaces(ctx, a.p.userID)
	if err != nil {
		return nil, wrapErr(err, "list workspaces")
	}
	out := []WorkspaceInfo{}
	for _, x := range acc {
		// From the committed record: listing starts no workspace (and in a cluster reads
		// workspaces run by other nodes locally).
		w, err := a.k.st.Workspace(ctx, x.Workspace)
		if err != nil {
			continue
		}
		if info, err := a.k.workspaceInfo(ctx, a.p, w); err == nil {
			out = append(out, info)
		}
	}
	return out, nil
}

// CreateWorkspace creates a workspace owned by the caller (users only).
// In cluster mode the object is routed (cluster.go): its calls reach whichever node runs the
// workspace.
func (a *Authed) CreateWorkspace(ctx context.Context, name string) (any, error) {
	if err := a.userOnly("createWorkspace"); err != nil {
		return nil, err
	}
	if err := validTitle("workspace name", name, 64); err != nil {
		return nil, err
	}
	w := store.Workspace{ID: store.WorkspaceID(store.NewID("ws")), Name: name, Owner: a.p.userID, Created: time.Now().UTC()}
	err := a.k.charge(ctx, a.p.userID, quota.Limits{Workspaces: 1}, func() error { return a.k.st.CreateWorkspace(ctx, w) })
	if err != nil {
		return nil, wrapErr(err, "create workspace")
	}
	err = a.k.withOverseer(ctx, w.ID, func(ov *overseer) error {
		return ov.audit(ctx, a.p, "workspace.create", string(w.ID), name)
	})
	if err != nil {
		return nil, err
	}
	if a.k.cfg.Cluster != nil && !a.peer {
		return a.k.routed(a.p, w.ID, ""), nil
	}
	return &Workspace{k: a.k, p: a.p, id: w.ID}, nil
}

// OpenWorkspace returns a workspace the caller may use. With shareKey, it first redeems a
// share link: the caller becomes a collaborator with the link's role.
// In cluster mode the object is routed (cluster.go), and the access check and the share link
// run on the node that runs the workspace.
func (a *Authed) OpenWorkspace(ctx context.Context, id store.WorkspaceID, shareKey string) (any, error) {
	if err := a.p.check(); err != nil {
		return nil, err
	}
	if a.k.cfg.Cluster == nil || a.peer {
		return a.openLocal(ctx, id, shareKey)
	}
	r := a.k.routed(a.p, id, shareKey)
	if _, err := r.GetProperty(ctx, "info"); err != nil {
		return nil, openFailed(err, id)
	}
	return r, nil
}

// openLocal opens a workspace run by this node (starting its overseer if needed).
func (a *Authed) openLocal(ctx context.Context, id store.WorkspaceID, shareKey string) (*Workspace, error) {
	err := a.k.withOverseer(ctx, id, func(ov *overseer) error {
		if shareKey != "" {
			if a.p.agent != nil {
				return fail(CodeForbidden, "open workspace: agents may not redeem share links")
			}
			return ov.redeem(ctx, a.p, shareKey)
		}
		_, err := ov.roleOf(a.p)
		return err
	})
	if err != nil {
		return nil, openFailed(err, id)
	}
	return &Workspace{k: a.k, p: a.p, id: id}, nil
}

// AgentInfo describes an agent to its owner.
type AgentInfo struct {
	ID      string           `json:"id"`
	Name    string           `json:"name"`
	Scope   store.AgentScope `json:"scope"`
	Created time.Time        `json:"created"`
}

// CreateAgent creates an agent of the caller with a subset of the caller's access, and returns
// {id, token}. The scope is checked now and again on every call the agent makes.
func (a *Authed) CreateAgent(ctx context.Context, name string, scope store.AgentScope) (map[string]any, error) {
	if err := a.userOnly("createAgent"); err != nil {
		return nil, err
	}
	if err := validName("agent", name); err != nil {
		return nil, err
	}
	if len(scope.Workspaces) == 0 {
		return nil, fail(CodeInvalidArgument, "create agent: the scope names no workspace")
	}
	for id, e := range scope.Workspaces {
		if e.Role != store.RoleBuild && e.Role != store.RoleUse {
			return nil, fail(CodeInvalidArgument, "create agent: role %q for workspace %s: want build or use", e.Role, id)
		}
		if len(e.Gadgets) == 0 && len(e.Gatekeepers) == 0 {
			return nil, fail(CodeInvalidArgument, "create agent: workspace %s lists no gadgets (use [\"*\"] for all) and no gatekeepers", id)
		}
		if err := a.k.validGatekeeperBindings(ctx, a.p.userID, e.Gatekeepers); err != nil {
			return nil, wrapErr(err, "create agent: workspace %s", id)
		}
		w, err := a.k.st.Workspace(ctx, id)
		if err != nil {
			return nil, wrapErr(err, "create agent: workspace %s", id)
		}
		role, err := a.p.roleIn(w)
		if err == nil && !role.Allows(e.Role) {
			err = fail(CodeForbidden, "you are %s in workspace %s and cannot give an agent %s", role, id, e.Role)
		}
		if err != nil {
			return nil, wrapErr(err, "create agent")
		}
	}
	tok, hash, err := auth.NewToken()
	if err != nil {
		return nil, wrapErr(err, "create agent")
	}
	now := time.Now().UTC()
	ag := store.Agent{ID: store.NewID("ag"), Owner: a.p.userID, Name: name, Scope: scope, Created: now, TokenHash: hash}
	err = a.k.charge(ctx, a.p.userID, quota.Limits{Agents: 1}, func() error {
		return a.k.st.PutAgent(ctx, ag, store.Token{Hash: hash, UserID: a.p.userID, AgentID: ag.ID, Created: now})
	})
	if err != nil {
		return nil, wrapErr(err, "create agent")
	}
	return map[string]any{"id": ag.ID, "token": tok}, nil
}

// ListAgents lists the caller's agents.
func (a *Authed) ListAgents(ctx context.Context) ([]AgentInfo, error) {
	if err := a.userOnly("listAgents"); err != nil {
		return nil, err
	}
	ags, err := a.k.st.Agents(ctx, a.p.userID)
	if err != nil {
		return nil, wrapErr(err, "list agents")
	}
	out := make([]AgentInfo, len(ags))
	for i, ag := range ags {
		out[i] = AgentInfo{ID: ag.ID, Name: ag.Name, Scope: ag.Scope, Created: ag.Created}
	}
	return out, nil
}

// RevokeAgent deletes one of the caller's agents; its sessions fail from their next call.
func (a *Authed) RevokeAgent(ctx context.Context, id string) error {
	if err := a.userOnly("revokeAgent"); err != nil {
		return err
	}
	ag, err := a.k.st.Agent(ctx, id)
	if err != nil || ag.Owner != a.p.userID {
		return fail(CodeNotFound, "revoke agent: you have no agent %q", id)
	}
	if err := a.k.st.DeleteAgent(ctx, id); err != nil {
		return wrapErr(err, "revoke agent")
	}
	a.k.revocations.Add(1)
	return nil
}
