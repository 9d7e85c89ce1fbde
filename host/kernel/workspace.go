package kernel

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/store"
)

// Workspace is a workspace as a Cap'n Web object (docs/api.md, "Workspace"). It holds only
// ids: every call finds (or restarts) the overseer and checks the caller's role again, so
// revocations take effect from the next call.
type Workspace struct {
	capnweb.Target
	k  *Kernel
	p  *principal
	id store.WorkspaceID
	// ov is the overseer the last call used: calls skip the kernel's registry while it runs.
	ov atomic.Pointer[overseer]
}

// enter runs fn on the overseer once p's role includes need.
func (w *Workspace) enter(ctx context.Context, need store.Role, what string, fn func(ov *overseer) error) error {
	return w.enterAs(ctx, need, what, func(ov *overseer, _ store.Role) error { return fn(ov) })
}

// enterAs is enter for fn that needs the caller's role. A collaborator who has not met the
// workspace's observer requirements is refused (observers.go).
func (w *Workspace) enterAs(ctx context.Context, need store.Role, what string, fn func(ov *overseer, role store.Role) error) error {
	return w.enterChecked(ctx, need, what, func(ov *overseer, meta store.Workspace, role store.Role) error {
		if err := ov.observerGate(ctx, w.p, meta); err != nil {
			return err
		}
		return fn(ov, role)
	})
}

// info describes the workspace to p.
func (ov *overseer) info(ctx context.Context, p *principal) (WorkspaceInfo, error) {
	meta, err := ov.snapshot()
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return ov.k.workspaceInfo(ctx, p, meta)
}

// workspaceInfo describes workspace record w to p (FORBIDDEN without access).
func (k *Kernel) workspaceInfo(ctx context.Context, p *principal, w store.Workspace) (WorkspaceInfo, error) {
	role, err := p.roleIn(w)
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return WorkspaceInfo{ID: w.ID, Name: w.Name, Owner: k.username(ctx, w.Owner), Role: role}, nil
}

// username returns the name of user id (the id itself if the user is gone).
func (k *Kernel) username(ctx context.Context, id string) string {
	u, err := k.st.User(ctx, id)
	if err != nil {
		return id
	}
	return u.Name
}

// Info returns {id, name, owner, role}; a collaborator gets it before meeting the
// workspace's observer requirements.
func (w *Workspace) Info(ctx context.Context) (info WorkspaceInfo, err error) {
	err = w.enterUngated(ctx, store.RoleUse, "info", func(ov *overseer, _ store.Role) error {
		info, err = ov.info(ctx, w.p)
		return err
	})
	return info, err
}

// Rename renames the workspace.
func (w *Workspace) Rename(ctx context.Context, name string) error {
	if err := validTitle("workspace name", name, 64); err != nil {
		return err
	}
	return w.enter(ctx, store.RoleBuild, "rename", func(ov *overseer) error {
		return ov.updateMeta(ctx, w.p, "workspace.rename", func(m *store.Workspace) (string, string, error) {
			old := m.Name
			m.Name = name
			return name, "from " + old, nil
		})
	})
}

// Delete deletes the workspace with all its gadgets and their state.
func (w *Workspace) Delete(ctx context.Context) error {
	return w.enter(ctx, store.RoleOwner, "delete", func(ov *overseer) error {
		err := ov.do(ctx, func() error {
			if err := ov.commit(ctx, store.DeleteWorkspace()); err != nil {
				return err
			}
			w.k.forgetStored(ov.meta.Owner)
			go ov.stop()
			return nil
		})
		if err == nil {
			w.k.chats.cancelWhere(w.id, errRunDeleted, func(*liveRun) bool { return true })
			w.k.hub.cancelGone(w.id, "")
			w.k.metrics.forget(w.id, "")
		}
		return err
	})
}

// ListGadgets lists the gadgets (an agent sees those in its scope).
func (w *Workspace) ListGadgets(ctx context.Context) ([]GadgetInfo, error) {
	out := []GadgetInfo{}
	err := w.enter(ctx, store.RoleUse, "listGadgets", func(ov *overseer) error {
		gs, err := ov.gadgetsOf(w.p)
		if err != nil {
			return err
		}
		slices.SortFunc(gs, func(a, b store.Gadget) int { return strings.Compare(a.Name, b.Name) })
		for _, g := range gs {
			out = append(out, ov.infoOf(g))
		}
		return nil
	})
	return out, err
}

// CreateGadget creates gadget name from code: a component (bytes), or a JS gadget's sources
// (an object {filename: source}, or those files as a gzip'd tar). A component is refused
// (INVALID_ARGUMENT, naming the import and the grant) when it imports more than the WASI
// baseline plus grants; a JS gadget needs jsruntime.GadgetGrants and must load. client, when
// given, is the browser UI script of the first version (a JS gadget may bring it as its files'
// client.js instead, not both), so that a component and its UI are one version.
func (w *Workspace) CreateGadget(ctx context.Context, name string, code any, grants []string, client *string) (*Gadget, error) {
	if err := validName("gadget", name); err != nil {
		return nil, err
	}
	bin, client, err := w.k.readUpload(code, client)
	if err != nil {
		return nil, wrapErr(err, "create gadget %s", name)
	}
	var g store.Gadget
	err = w.enter(ctx, store.RoleBuild, "createGadget", func(ov *overseer) error {
		if err := w.p.checkGadget(w.id, name); err != nil {
			return err
		}
		var err error
		g, err = ov.createGadget(ctx, w.p, name, bin, client, grants, "", "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Gadget{w: w, name: name, id: g.ID}, nil
}

// Gadget returns gadget name (NOT_FOUND on first use when there is none).
func (w *Workspace) Gadget(name string) *Gadget { return &Gadget{w: w, name: name} }

// SubscribeGadgets calls cb({type, gadget}) on every change to the gadget list.
func (w *Workspace) SubscribeGadgets(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return w.subscribe(ctx, store.RoleUse, "subscribeGadgets", gadgetsTopic(w.id), store.Gadget{}, cb)
}

// SubscribeConsole calls cb({gadget, stream, level, text, time}) for every console line.
func (w *Workspace) SubscribeConsole(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return w.subscribe(ctx, store.RoleBuild, "subscribeConsole", consoleTopic(w.id, ""), store.Gadget{}, cb)
}

// subscribe subscribes cb to topic after checking need (and, for a gadget's topic, the
// agent's gadget subset); the same checks run before every delivery.
func (w *Workspace) subscribe(ctx context.Context, need store.Role, what, topic string, gadget store.Gadget, cb *capnweb.Stub) (*Subscription, error) {
	check := func(ctx context.Context) error {
		return w.enter(ctx, need, what, func(*overseer) error {
			if gadget.ID != "" {
				return w.p.checkGadget(w.id, gadget.Name)
			}
			return nil
		})
	}
	if err := check(ctx); err != nil {
		return nil, err
	}
	return w.k.hub.subscribe(topic, w.id, gadget.ID, cb, func() error { return check(context.Background()) })
}

// Bind lets gadget call target through atelier:host/bindings under name.
func (w *Workspace) Bind(ctx context.Context, gadget, name, target string) error {
	if err := validName("binding", name); err != nil {
		return err
	}
	return w.enter(ctx, store.RoleBuild, "bind", func(ov *overseer) error {
		g, t, err := w.twoGadgets(ov, gadget, target)
		if err != nil {
			return err
		}
		_, err = ov.bind(ctx, w.p, g.ID, name, t.ID)
		return err
	})
}

// Unbind removes a binding.
func (w *Workspace) Unbind(ctx context.Context, gadget, name string) error {
	return w.enter(ctx, store.RoleBuild, "unbind", func(ov *overseer) error {
		g, err := w.scopedGadget(ov, gadget)
		if err != nil {
			return err
		}
		_, err = ov.bind(ctx, w.p, g.ID, name, "")
		return err
	})
}

// scopedGadget returns the record of gadget name if the caller's scope includes it. The scope
// is checked first, so that an agent learns nothing of the gadgets outside it (not even
// whether they exist).
func (w *Workspace) scopedGadget(ov *overseer, name string) (store.Gadget, error) {
	if err := w.p.checkGadget(w.id, name); err != nil {
		return store.Gadget{}, err
	}
	return ov.gadgetByName(name)
}

func (w *Workspace) twoGadgets(ov *overseer, a, b string) (store.Gadget, store.Gadget, error) {
	if err := errors.Join(w.p.checkGadget(w.id, a), w.p.checkGadget(w.id, b)); err != nil {
		return store.Gadget{}, store.Gadget{}, fail(CodeForbidden, "%v", err)
	}
	ga, err := ov.gadgetByName(a)
	if err != nil {
		return store.Gadget{}, store.Gadget{}, err
	}
	gb, err := ov.gadgetByName(b)
	if err != nil {
		return store.Gadget{}, store.Gadget{}, err
	}
	return ga, gb, nil
}

// CollaboratorInfo is one collaborator.
type CollaboratorInfo struct {
	Username string     `json:"username"`
	Role     store.Role `json:"role"`
}

// ListCollaborators lists the users the workspace is shared with.
func (w *Workspace) ListCollaborators(ctx context.Context) ([]CollaboratorInfo, error) {
	out := []CollaboratorInfo{}
	err := w.enter(ctx, store.RoleUse, "listCollaborators", func(ov *overseer) error {
		meta, err := ov.snapshot()
		for _, c := range meta.Collaborators {
			out = append(out, CollaboratorInfo{Username: w.k.username(ctx, c.UserID), Role: c.Role})
		}
		return err
	})
	return out, err
}

// AddCollaborator shares the workspace with user username as role (build or use).
func (w *Workspace) AddCollaborator(ctx context.Context, username string, role store.Role) error {
	if role != store.RoleBuild && role != store.RoleUse {
		return fail(CodeInvalidArgument, "role %q: want build or use", role)
	}
	u, err := w.k.st.UserByName(ctx, username)
	if err != nil {
		return fail(CodeNotFound, "add collaborator: no user %q", username)
	}
	return w.enter(ctx, store.RoleOwner, "addCollaborator", func(ov *overseer) error {
		return ov.updateMeta(ctx, w.p, "collaborator.add", func(m *store.Workspace) (string, string, error) {
			if u.ID == m.Owner {
				return "", "", fail(CodeInvalidArgument, "%s owns the workspace", username)
			}
			setCollaborator(m, u.ID, role, "")
			return username, string(role), nil
		})
	})
}

// RemoveCollaborator unshares the workspace; the user's live stubs fail from their next call.
func (w *Workspace) RemoveCollaborator(ctx context.Context, username string) error {
	u, err := w.k.st.UserByName(ctx, username)
	if err != nil {
		return fail(CodeNotFound, "remove collaborator: no user %q", username)
	}
	return w.enter(ctx, store.RoleOwner, "removeCollaborator", func(ov *overseer) error {
		return ov.updateMeta(ctx, w.p, "collaborator.remove", func(m *store.Workspace) (string, string, error) {
			if !slices.ContainsFunc(m.Collaborators, func(c store.Collaborator) bool { return c.UserID == u.ID }) {
				return "", "", fail(CodeNotFound, "%s is not a collaborator", username)
			}
			setCollaborator(m, u.ID, "", "")
			return username, "", nil
		})
	})
}

// ShareLinkInfo describes a share link (never its key).
type ShareLinkInfo struct {
	ID      string     `json:"id"`
	Role    store.Role `json:"role"`
	Created time.Time  `json:"created"`
}

// CreateShareLink returns {id, key}: whoever opens the workspace with the key becomes a
// collaborator with role. Only the key's hash is stored.
func (w *Workspace) CreateShareLink(ctx context.Context, role store.Role) (map[string]any, error) {
	if role != store.RoleBuild && role != store.RoleUse {
		return nil, fail(CodeInvalidArgument, "role %q: want build or use", role)
	}
	key, hash, err := auth.NewToken()
	if err != nil {
		return nil, wrapErr(err, "create share link")
	}
	id := store.NewID("sl")
	err = w.enter(ctx, store.RoleOwner, "createShareLink", func(ov *overseer) error {
		return ov.updateMeta(ctx, w.p, "share.create", func(m *store.Workspace) (string, string, error) {
			m.ShareLinks = append(m.ShareLinks, store.ShareLink{ID: id, Role: role, KeyHash: hash, Created: time.Now().UTC()})
			return id, string(role), nil
		})
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "key": key}, nil
}

// ListShareLinks lists the live share links.
func (w *Workspace) ListShareLinks(ctx context.Context) ([]ShareLinkInfo, error) {
	out := []ShareLinkInfo{}
	err := w.enter(ctx, store.RoleOwner, "listShareLinks", func(ov *overseer) error {
		meta, err := ov.snapshot()
		for _, l := range meta.ShareLinks {
			out = append(out, ShareLinkInfo{ID: l.ID, Role: l.Role, Created: l.Created})
		}
		return err
	})
	return out, err
}

// RevokeShareLink deletes a share link and removes the collaborators who joined through it.
func (w *Workspace) RevokeShareLink(ctx context.Context, id string) error {
	return w.enter(ctx, store.RoleOwner, "revokeShareLink", func(ov *overseer) error {
		return ov.updateMeta(ctx, w.p, "share.revoke", func(m *store.Workspace) (string, string, error) {
			n := len(m.ShareLinks)
			m.ShareLinks = slices.DeleteFunc(m.ShareLinks, func(l store.ShareLink) bool { return l.ID == id })
			if len(m.ShareLinks) == n {
				return "", "", fail(CodeNotFound, "no share link %q", id)
			}
			m.Collaborators = slices.DeleteFunc(m.Collaborators, func(c store.Collaborator) bool { return c.Via == id })
			return id, "", nil
		})
	})
}

// AuditFilter narrows auditLog: lines older than Before (a line's seq: the next page after a
// page ending at it), of one Actor, whose action starts with Action.
type AuditFilter struct {
	Before uint64 `json:"before"`
	Actor  string `json:"actor"`
	Action string `json:"action"`
}

// AuditLog returns up to limit (default 100, at most 1000) audit entries that match filter,
// newest first.
func (w *Workspace) AuditLog(ctx context.Context, limit int, filter AuditFilter) ([]store.AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	q := store.AuditQuery{Limit: min(limit, 1000), Before: filter.Before, Actor: filter.Actor, Action: filter.Action}
	var out []store.AuditEntry
	err := w.enter(ctx, store.RoleBuild, "auditLog", func(ov *overseer) error {
		var err error
		out, err = ov.ws.Audit(q)
		return err
	})
	if out == nil {
		out = []store.AuditEntry{}
	}
	return out, err
}
