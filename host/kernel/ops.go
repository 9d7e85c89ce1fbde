package kernel

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"atelier/host/auth"
	"atelier/host/quota"
	"atelier/host/store"
)

// GadgetInfo describes a gadget to clients.
type GadgetInfo struct {
	ID       store.GadgetID    `json:"id"`
	Name     string            `json:"name"`
	Grants   []string          `json:"grants"`
	Current  int               `json:"current"`
	Versions []store.Version   `json:"versions"`
	Bindings map[string]string `json:"bindings"`
}

// infoOf describes g, naming its binding targets.
func (ov *overseer) infoOf(g store.Gadget) GadgetInfo {
	info := GadgetInfo{ID: g.ID, Name: g.Name, Grants: slices.Clone(g.Grants), Current: g.Current, Versions: slices.Clone(g.Versions), Bindings: map[string]string{}}
	if info.Grants == nil {
		info.Grants = []string{}
	}
	ov.mu.RLock()
	for name, target := range g.Bindings {
		info.Bindings[name] = ov.gadgets[target].Name
	}
	ov.mu.RUnlock()
	return info
}

// notifyGadget tells gadget-list subscribers about a change.
func (ov *overseer) notifyGadget(kind string, g store.Gadget) {
	ov.k.hub.publish(gadgetsTopic(ov.id), map[string]any{"type": kind, "gadget": ov.infoOf(g)})
}

// nameTaken reports whether another gadget than except is called name; on the loop only.
func (ov *overseer) nameTaken(name string, except store.GadgetID) bool {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	for id, g := range ov.gadgets {
		if g.Name == name && id != except {
			return true
		}
	}
	return false
}

// createGadget stores a new gadget whose first version is code with the UI script client
// (nil: none); chat names the chat whose accepted draft made it ("" for none).
func (ov *overseer) createGadget(ctx context.Context, p *principal, name string, code []byte, client *string, grants []string, detail, chat string) (store.Gadget, error) {
	var g store.Gadget
	sha, err := ov.k.checkCode(ctx, code, grants) // off the loop: it may compile
	if err != nil {
		return store.Gadget{}, wrapErr(err, "create gadget %s", name)
	}
	err = ov.do(ctx, func() error {
		if ov.nameTaken(name, "") {
			return fail(CodeConflict, "workspace %s already has a gadget %q; pick another name or deploy to it", ov.id, name)
		}
		now := time.Now().UTC()
		g = store.Gadget{ID: store.GadgetID(store.NewID("g")), Name: name, Grants: slices.Clone(grants), Current: 1, Created: now}
		clientSHA, muts := versionClient(&g, client)
		g.Versions = []store.Version{{Number: 1, SHA256: sha, Size: len(code), Client: clientSHA, Created: now, Chat: chat}}
		muts = append(muts, store.PutCode(code), store.PutGadget(g), auditEntry(p, "gadget.create", name, detail))
		return ov.k.charge(ctx, ov.meta.Owner, quota.Limits{Gadgets: 1, StoredBytes: int64(len(code))}, func() error {
			if err := ov.commit(ctx, muts...); err != nil {
				return err
			}
			ov.setGadget(g)
			return nil
		})
	})
	if err != nil {
		return store.Gadget{}, wrapErr(err, "create gadget %s", name)
	}
	ov.notifyGadget("added", g)
	return g, nil
}

// updateGadget runs change on a copy of gadget id's record on the loop, commits the record with
// an audit line, retires the actor when retire is set, and notifies subscribers.
func (ov *overseer) updateGadget(ctx context.Context, p *principal, id store.GadgetID, action string, retire bool, change func(g *store.Gadget) ([]store.Mutation, string, error)) (store.Gadget, error) {
	var g store.Gadget
	err := ov.do(ctx, func() error {
		var err error
		if g, err = ov.gadget(id); err != nil {
			return err
		}
		g.Versions = slices.Clone(g.Versions)
		g.Grants = slices.Clone(g.Grants)
		muts, detail, err := change(&g)
		if err != nil {
			return err
		}
		muts = append(muts, store.PutGadget(g), auditEntry(p, action, g.Name, detail))
		if err := ov.commit(ctx, muts...); err != nil {
			return err
		}
		if retire {
			ov.retireActor(id)
		}
		ov.setGadget(g)
		return nil
	})
	if err != nil {
		return store.Gadget{}, err
	}
	ov.notifyGadget("updated", g)
	return g, nil
}

// deploy makes code the gadget's new current version; grants nil keeps the grants (those the
// runtime cannot provide stay stored and ignored, see usableGrants), client nil the current UI
// script. The code is checked before the overseer's loop runs the change
// (again on the loop, should the grants have changed in between). chat names the chat whose
// accepted draft made the version ("" for none).
func (ov *overseer) deploy(ctx context.Context, p *principal, id store.GadgetID, code []byte, client *string, grants []string, chat string) (store.Gadget, error) {
	checked := grants
	if checked == nil {
		g, err := ov.gadget(id)
		if err != nil {
			return store.Gadget{}, err
		}
		checked = ov.k.usableGrants(g.Grants)
	}
	sha, err := ov.k.checkCode(ctx, code, checked)
	if err != nil {
		return store.Gadget{}, err
	}
	return ov.updateGadget(ctx, p, id, "gadget.deploy", true, func(g *store.Gadget) ([]store.Mutation, string, error) {
		if grants != nil {
			g.Grants = slices.Clone(grants)
		}
		if usable := ov.k.usableGrants(g.Grants); !slices.Equal(usable, checked) {
			if _, err := ov.k.checkCode(ctx, code, usable); err != nil {
				return nil, "", err
			}
		}
		if err := ov.k.addStored(ctx, ov.meta.Owner, int64(len(code))); err != nil {
			return nil, "", err
		}
		next := g.Versions[len(g.Versions)-1].Number + 1
		clientSHA, muts := versionClient(g, client)
		g.Versions = append(g.Versions, store.Version{Number: next, SHA256: sha, Size: len(code), Client: clientSHA, Created: time.Now().UTC(), Chat: chat})
		g.Current = next
		return append(muts, store.PutCode(code)), fmt.Sprintf("version %d, grants %s", next, strings.Join(g.Grants, ",")), nil
	})
}

// rollback makes an earlier version current again, if the current grants still cover it.
func (ov *overseer) rollback(ctx context.Context, p *principal, id store.GadgetID, version int) (store.Gadget, error) {
	return ov.updateGadget(ctx, p, id, "gadget.rollback", true, func(g *store.Gadget) ([]store.Mutation, string, error) {
		i := slices.IndexFunc(g.Versions, func(v store.Version) bool { return v.Number == version })
		if i < 0 {
			return nil, "", fail(CodeNotFound, "gadget %s has no version %d (see versions())", g.Name, version)
		}
		code, err := ov.k.st.Code(ctx, g.Versions[i].SHA256)
		if err != nil {
			return nil, "", err
		}
		if _, err := ov.k.checkCode(ctx, code, ov.k.usableGrants(g.Grants)); err != nil {
			return nil, "", err
		}
		g.Current = version
		return nil, fmt.Sprintf("version %d", version), nil
	})
}

// renameGadget renames a gadget.
func (ov *overseer) renameGadget(ctx context.Context, p *principal, id store.GadgetID, name string) (store.Gadget, error) {
	return ov.updateGadget(ctx, p, id, "gadget.rename", false, func(g *store.Gadget) ([]store.Mutation, string, error) {
		if ov.nameTaken(name, id) {
			return nil, "", fail(CodeConflict, "workspace %s already has a gadget %q", ov.id, name)
		}
		old := g.Name
		g.Name = name
		return nil, "from " + old, nil
	})
}

// bind lets gadget id call target under name (target "" removes the binding).
func (ov *overseer) bind(ctx context.Context, p *principal, id store.GadgetID, name string, target store.GadgetID) (store.Gadget, error) {
	action := "gadget.bind"
	if target == "" {
		action = "gadget.unbind"
	}
	return ov.updateGadget(ctx, p, id, action, false, func(g *store.Gadget) ([]store.Mutation, string, error) {
		g.Bindings = copyBindings(g.Bindings)
		if target == "" {
			if _, ok := g.Bindings[name]; !ok {
				return nil, "", fail(CodeNotFound, "gadget %s has no binding %q", g.Name, name)
			}
			delete(g.Bindings, name)
			return nil, name, nil
		}
		if _, err := ov.gadget(target); err != nil {
			return nil, "", err
		}
		if _, ok := g.Gatekeepers[name]; ok {
			return nil, "", fail(CodeConflict, "gadget %s already binds a gatekeeper as %q", g.Name, name)
		}
		g.Bindings[name] = target
		return nil, name + " -> " + string(target), nil
	})
}

func copyBindings(m map[string]store.GadgetID) map[string]store.GadgetID {
	out := make(map[string]store.GadgetID, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// deleteGadget removes a gadget with its state; bindings to it are removed too.
func (ov *overseer) deleteGadget(ctx context.Context, p *principal, id store.GadgetID) error {
	var g store.Gadget
	var gone []store.Hook // its hooks
	err := ov.do(ctx, func() error {
		var err error
		if g, err = ov.gadget(id); err != nil {
			return err
		}
		muts := []store.Mutation{store.DeleteGadget(id), auditEntry(p, "gadget.delete", g.Name, "")}
		var rebound []store.Gadget
		ov.mu.RLock()
		for _, other := range ov.gadgets {
			changed := false
			for name, target := range other.Bindings {
				if target == id {
					if !changed {
						other.Bindings = copyBindings(other.Bindings)
						changed = true
					}
					delete(other.Bindings, name)
				}
			}
			if changed {
				rebound = append(rebound, other)
				muts = append(muts, store.PutGadget(other))
			}
		}
		ov.mu.RUnlock()
		// Unlist the gadget and stop its actor first (its last commit lands), so that no
		// write of it can follow the deletion.
		ov.mu.Lock()
		delete(ov.gadgets, id)
		ov.mu.Unlock()
		ov.retireActor(id)
		// Its hooks go in the same commit (hooks.go).
		if gone, err = ov.hooksWhere(func(h store.Hook) bool { return h.Gadget == id }); err != nil {
			ov.setGadget(g)
			return err
		}
		muts = append(muts, hookMutations(gone, p.name(), "its gadget was deleted")...)
		if err := ov.commit(ctx, muts...); err != nil {
			ov.setGadget(g)
			return err
		}
		ov.mu.Lock()
		for _, o := range rebound {
			ov.gadgets[o.ID] = o
		}
		ov.mu.Unlock()
		ov.k.forgetStored(ov.meta.Owner)
		return nil
	})
	if err != nil {
		return wrapErr(err, "delete gadget")
	}
	ov.k.hub.cancelGone(ov.id, id)
	ov.hooksRemoved(gone)
	ov.sweepHooks(ctx, func(h store.Hook) bool { return h.Gadget == id }, p.name(), "its gadget was deleted")
	for name := range g.Gatekeepers {
		ov.links.cut(linkKey{id, name})
	}
	ov.notifyGadget("removed", g)
	return nil
}

// updateMeta runs change on a copy of the workspace record on the loop and commits it with an
// audit line naming the target change returns ("" when it changed nothing).
func (ov *overseer) updateMeta(ctx context.Context, p *principal, action string, change func(w *store.Workspace) (string, string, error)) error {
	return ov.do(ctx, func() error {
		w, err := ov.snapshot()
		if err != nil {
			return err
		}
		w.Collaborators = slices.Clone(w.Collaborators)
		w.ShareLinks = slices.Clone(w.ShareLinks)
		target, detail, err := change(&w)
		if err != nil || target == "" { // target "": nothing changed
			return err
		}
		if err := ov.commit(ctx, store.PutWorkspace(w), auditEntry(p, action, target, detail)); err != nil {
			return err
		}
		ov.setMeta(w)
		return nil
	})
}

// setCollaborator gives user the role (role "" removes the user); via names the share link.
// A collaborator who stays keeps the accounts they picked for observer requirements.
func setCollaborator(w *store.Workspace, user string, role store.Role, via string) {
	var observers map[string]string
	w.Collaborators = slices.DeleteFunc(w.Collaborators, func(c store.Collaborator) bool {
		if c.UserID == user {
			observers = c.Observers
		}
		return c.UserID == user
	})
	if role != "" {
		w.Collaborators = append(w.Collaborators, store.Collaborator{UserID: user, Role: role, Via: via, Observers: observers})
	}
}

// redeem adds p as a collaborator through the share link whose key is key.
func (ov *overseer) redeem(ctx context.Context, p *principal, key string) error {
	hash := auth.HashToken(key)
	return ov.updateMeta(ctx, p, "share.redeem", func(w *store.Workspace) (string, string, error) {
		i := slices.IndexFunc(w.ShareLinks, func(l store.ShareLink) bool { return auth.Equal(l.KeyHash, hash) })
		if i < 0 {
			return "", "", fail(CodeForbidden, "the share key is not valid for workspace %s (revoked or mistyped)", w.ID)
		}
		link := w.ShareLinks[i]
		if current, err := p.roleIn(*w); err == nil && current.Allows(link.Role) {
			return "", "", nil // nothing to gain; audit nothing
		}
		setCollaborator(w, p.userID, link.Role, link.ID)
		return p.username, "link " + link.ID + " role " + string(link.Role), nil
	})
}
