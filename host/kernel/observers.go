package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"atelier/host/store"
)

// Observer requirements (docs/security.md, "Observer requirements"): a workspace's owner names
// gatekeeper bindings ("GADGET.NAME") that a collaborator with a role must be able to read
// themselves. Such a collaborator picks, for each, an account of their own on the same
// gatekeeper for the same resource URL as the binding's account; until then every call that
// shows them the workspace's contents is refused with FAILED_PRECONDITION. The check is made
// again on every call, against the binding and the accounts as they are then: rebinding the
// gadget to another resource, or disconnecting the picked account, locks the collaborator out
// again. The owner (and the owner's agents) are never subject to it; an agent of a
// collaborator, and a chat run for one, act with the collaborator's picks.

// errObserverLocked marks the refusal of a collaborator who has not met the workspace's
// observer requirements.
var errObserverLocked = errors.New("observer requirements not met")

// requirementRoles are the roles requirements may be set for, lowest first.
var requirementRoles = []store.Role{store.RoleUse, store.RoleBuild}

// ObserverRequirement is one binding a collaborator must be able to read themselves, as
// listObserverRequirements describes it to the caller.
type ObserverRequirement struct {
	// Binding is the gadget's gatekeeper binding, "GADGET.NAME".
	Binding string `json:"binding"`
	// Role is the role whose requirements name it (a build collaborator also meets use's).
	Role store.Role `json:"role"`
	// Gatekeeper is the id of the gatekeeper an account must be of; GatekeeperName its name.
	Gatekeeper     string `json:"gatekeeper,omitempty"`
	GatekeeperName string `json:"gatekeeperName,omitempty"`
	// Kind and Resource are the kind and the URL of the resource the binding reads: an
	// account meets the requirement when it is for this very URL.
	Kind     string `json:"kind,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Inactive is set when the binding is gone or its account was disconnected: nothing can be
	// read through it, so it locks nobody out (it applies again once the gadget is bound).
	Inactive bool `json:"inactive,omitempty"`
	// Satisfied reports whether the caller met it (always, for the owner), and Account with
	// which of their accounts.
	Satisfied bool   `json:"satisfied"`
	Account   string `json:"account,omitempty"`
	// Candidates are the caller's accounts that would meet it.
	Candidates []string `json:"candidates"`
	// Problem says, when not satisfied, what is missing and what to do.
	Problem string `json:"problem,omitempty"`
}

// parseBindingRef splits "GADGET.NAME".
func parseBindingRef(ref string) (gadget, name string, err error) {
	gadget, name, ok := strings.Cut(ref, ".")
	if !ok || validName("gadget", gadget) != nil || validName("binding", name) != nil {
		return "", "", fail(CodeInvalidArgument, "binding %.80q: want GADGET.NAME, a gadget's gatekeeper binding (see listGatekeeperBindings)", ref)
	}
	return gadget, name, nil
}

// requiredOf returns the requirements that apply to a collaborator with role, each with the
// lowest role that names it, in the order they were set.
func requiredOf(w store.Workspace, role store.Role) []ObserverRequirement {
	var out []ObserverRequirement
	seen := map[string]bool{}
	for _, r := range requirementRoles {
		if !role.Allows(r) {
			continue
		}
		for _, b := range w.ObserverRequirements[r] {
			if !seen[b] {
				seen[b] = true
				out = append(out, ObserverRequirement{Binding: b, Role: r, Candidates: []string{}})
			}
		}
	}
	return out
}

// boundAccount returns the account binding ref of the workspace's gadgets acts with; ok is
// false when the gadget, the binding or the account is gone.
func (ov *overseer) boundAccount(ctx context.Context, ref string) (acct store.GatekeeperAccount, ok bool, err error) {
	gadget, name, err := parseBindingRef(ref)
	if err != nil {
		return acct, false, err
	}
	g, err := ov.gadgetByName(gadget)
	if errCode(err) == CodeNotFound {
		return acct, false, nil
	} else if err != nil {
		return acct, false, err
	}
	id, bound := g.Gatekeepers[name]
	if !bound {
		return acct, false, nil
	}
	acct, err = ov.k.st.Account(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return acct, false, nil
	} else if err != nil {
		return acct, false, wrapErr(err, "binding %s", ref)
	}
	return acct, true, nil
}

// suits reports whether account a can stand for bound: the same gatekeeper and the very same
// resource URL. The user check is the caller's.
func suits(a, bound store.GatekeeperAccount) bool {
	return a.Gatekeeper == bound.Gatekeeper && a.Resource == bound.Resource
}

// collaboratorOf returns the collaborator entry of user in w.
func collaboratorOf(w store.Workspace, user string) (store.Collaborator, bool) {
	i := slices.IndexFunc(w.Collaborators, func(c store.Collaborator) bool { return c.UserID == user })
	if i < 0 {
		return store.Collaborator{}, false
	}
	return w.Collaborators[i], true
}

// observerStatus describes the requirements that apply to a collaborator with role to user,
// who has picked the accounts of picks (nil for the owner, who meets them all).
func (ov *overseer) observerStatus(ctx context.Context, w store.Workspace, role store.Role, user string, owner bool, picks map[string]string) ([]ObserverRequirement, error) {
	reqs := requiredOf(w, role)
	if len(reqs) == 0 {
		return reqs, nil
	}
	mine, err := ov.k.st.Accounts(ctx, user)
	if err != nil {
		return nil, wrapErr(err, "list your accounts")
	}
	for i := range reqs {
		r := &reqs[i]
		bound, ok, err := ov.boundAccount(ctx, r.Binding)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.Inactive, r.Satisfied = true, true
			continue
		}
		info := ov.k.accountInfo(ctx, bound)
		r.Gatekeeper, r.GatekeeperName, r.Kind, r.Resource = bound.Gatekeeper, cmp.Or(info.Name, bound.Gatekeeper), info.Kind, bound.Resource
		for _, a := range mine {
			if suits(a, bound) {
				r.Candidates = append(r.Candidates, a.ID)
			}
		}
		if owner {
			r.Satisfied = true
			continue
		}
		picked := picks[r.Binding]
		if slices.Contains(r.Candidates, picked) {
			r.Satisfied, r.Account = true, picked
			continue
		}
		r.Problem = requirementProblem(*r, picked)
	}
	return reqs, nil
}

// requirementProblem says why r is not met and what to do: picked is the account the
// collaborator picked ("" when none).
func requirementProblem(r ObserverRequirement, picked string) string {
	need := fmt.Sprintf("this workspace needs you to be able to read %s yourself (binding %s, gatekeeper %s)", r.Resource, r.Binding, r.GatekeeperName)
	if picked != "" {
		need += fmt.Sprintf("; the account %s you picked for it was disconnected or is not for that resource any more", picked)
	}
	if len(r.Candidates) == 0 {
		return need + fmt.Sprintf("; connect an account of %s for %s, then pick it (`atelier share satisfy %s ACCOUNT`, or the workshop's prompt)", r.GatekeeperName, r.Resource, r.Binding)
	}
	return need + fmt.Sprintf("; pick your account for it: `atelier share satisfy %s %s` (or in the workshop's prompt)", r.Binding, r.Candidates[0])
}

// observerGate refuses p (FAILED_PRECONDITION, naming what is missing and what to do) when the
// workspace's observer requirements for p's role are not all met by accounts p picked. The
// owner and the owner's agents pass; a collaborator's agents and chat runs act with the
// collaborator's role and picks. w is the workspace record p's role was just checked against
// (overseer.access): every call passes the gate, and it reads that record rather than copying
// it again.
func (ov *overseer) observerGate(ctx context.Context, p *principal, w store.Workspace) error {
	if len(w.ObserverRequirements) == 0 || w.Owner == p.userID {
		return nil
	}
	c, ok := collaboratorOf(w, p.userID)
	if !ok {
		return nil // roleIn refused already
	}
	locked := false
	for _, r := range requiredOf(w, c.Role) { // the quick check: no account lists
		bound, ok, err := ov.boundAccount(ctx, r.Binding)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		picked, err := ov.k.st.Account(ctx, c.Observers[r.Binding])
		if err != nil || picked.Owner != p.userID || !suits(picked, bound) {
			locked = true
			break
		}
	}
	if !locked {
		return nil
	}
	reqs, err := ov.observerStatus(ctx, w, c.Role, p.userID, false, c.Observers)
	if err != nil {
		return err
	}
	var problems []string
	for _, r := range reqs {
		if !r.Satisfied {
			problems = append(problems, r.Problem)
		}
	}
	if len(problems) == 0 { // met meanwhile
		return nil
	}
	return &Error{Code: CodeFailedPrecondition, Err: errObserverLocked,
		Msg: fmt.Sprintf("workspace %s shows its data only to collaborators who can read it themselves: %s", w.Name, strings.Join(problems, "; "))}
}

// enterUngated is enter without the observer gate, for the calls a collaborator needs to meet
// the requirements (info, listObserverRequirements, satisfyObserverRequirement).
func (w *Workspace) enterUngated(ctx context.Context, need store.Role, what string, fn func(ov *overseer, role store.Role) error) error {
	return w.enterChecked(ctx, need, what, func(ov *overseer, _ store.Workspace, role store.Role) error { return fn(ov, role) })
}

// enterChecked runs fn on the overseer once p's role includes need, with the workspace record
// the role was checked against.
func (w *Workspace) enterChecked(ctx context.Context, need store.Role, what string, fn func(ov *overseer, meta store.Workspace, role store.Role) error) error {
	return w.k.withCachedOverseer(ctx, w.id, &w.ov, func(ov *overseer) error {
		meta, role, err := ov.require(w.p, need, what)
		if err != nil {
			return err
		}
		return fn(ov, meta, role)
	})
}

// SetObserverRequirements makes bindings ("GADGET.NAME", gatekeeper bindings of this
// workspace's gadgets whose accounts are connected) the bindings a collaborator with role
// (build or use; build collaborators meet use's too) must be able to read with an account of
// their own; an empty list drops role's requirements. Owner only.
func (w *Workspace) SetObserverRequirements(ctx context.Context, role store.Role, bindings []string) error {
	if role != store.RoleBuild && role != store.RoleUse {
		return fail(CodeInvalidArgument, "set observer requirements: role %q: want build or use", role)
	}
	for _, b := range bindings {
		if _, _, err := parseBindingRef(b); err != nil {
			return wrapErr(err, "set observer requirements")
		}
	}
	bindings = slices.Compact(slices.Sorted(slices.Values(bindings)))
	return w.enter(ctx, store.RoleOwner, "setObserverRequirements", func(ov *overseer) error {
		for _, b := range bindings {
			_, ok, err := ov.boundAccount(ctx, b)
			if err != nil {
				return err
			}
			if !ok {
				return fail(CodeNotFound, "set observer requirements: workspace %s has no gatekeeper binding %s with a connected account (see listGatekeeperBindings)", ov.id, b)
			}
		}
		return ov.updateMeta(ctx, w.p, "observer.require", func(m *store.Workspace) (string, string, error) {
			if slices.Equal(m.ObserverRequirements[role], bindings) {
				return "", "", nil
			}
			reqs := maps.Clone(m.ObserverRequirements)
			if reqs == nil {
				reqs = map[store.Role][]string{}
			}
			if len(bindings) == 0 {
				delete(reqs, role)
			} else {
				reqs[role] = bindings
			}
			if len(reqs) == 0 {
				reqs = nil
			}
			m.ObserverRequirements = reqs
			return string(role), strings.Join(bindings, " "), nil
		})
	})
}

// ListObserverRequirements lists the bindings a collaborator with role must be able to read
// themselves (role "": the caller's own; for the owner, those of build, which include use's),
// with whether the caller met each, with which account, and which of their accounts would.
// A collaborator may list only their own role's. Not subject to the requirements itself.
func (w *Workspace) ListObserverRequirements(ctx context.Context, role store.Role) ([]ObserverRequirement, error) {
	var out []ObserverRequirement
	err := w.enterUngated(ctx, store.RoleUse, "listObserverRequirements", func(ov *overseer, mine store.Role) error {
		meta, err := ov.snapshot()
		if err != nil {
			return err
		}
		owner := meta.Owner == w.p.userID
		c, _ := collaboratorOf(meta, w.p.userID)
		if !owner {
			mine = c.Role // an agent acts with its user's status
		}
		switch {
		case role == "" && owner:
			role = store.RoleBuild
		case role == "":
			role = mine
		case role != store.RoleBuild && role != store.RoleUse:
			return fail(CodeInvalidArgument, "list observer requirements: role %q: want build or use", role)
		case !owner && role != mine:
			return fail(CodeForbidden, "list observer requirements: you may list only your own role's (%s)", mine)
		}
		out, err = ov.observerStatus(ctx, meta, role, w.p.userID, owner, c.Observers)
		return err
	})
	if out == nil {
		out = []ObserverRequirement{}
	}
	return out, wrapErr(err, "list observer requirements")
}

// SatisfyObserverRequirement records that the caller (a collaborator; users only) reads
// binding ("GADGET.NAME", one of the requirements of their role) with accountID, an account
// of theirs on the binding's gatekeeper for the binding's resource URL.
func (w *Workspace) SatisfyObserverRequirement(ctx context.Context, binding, accountID string) error {
	if w.p.agent != nil {
		return fail(CodeForbidden, "satisfyObserverRequirement: agents act with their owner's accounts; their owner picks them")
	}
	if _, _, err := parseBindingRef(binding); err != nil {
		return wrapErr(err, "satisfy observer requirement")
	}
	acct, ok := w.k.userAccount(ctx, w.p.userID, accountID)
	if !ok {
		return fail(CodeNotFound, "satisfy observer requirement: you have no account %q (see listAccounts, or `atelier account list`)", accountID)
	}
	return w.enterUngated(ctx, store.RoleUse, "satisfyObserverRequirement", func(ov *overseer, _ store.Role) error {
		return ov.updateMeta(ctx, w.p, "observer.satisfy", func(m *store.Workspace) (string, string, error) {
			if m.Owner == w.p.userID {
				return "", "", fail(CodeInvalidArgument, "satisfy observer requirement: you own workspace %s; its observer requirements do not apply to you", m.Name)
			}
			i := slices.IndexFunc(m.Collaborators, func(c store.Collaborator) bool { return c.UserID == w.p.userID })
			if i < 0 {
				return "", "", noWorkspace(m.ID)
			}
			c := m.Collaborators[i]
			if !slices.ContainsFunc(requiredOf(*m, c.Role), func(r ObserverRequirement) bool { return r.Binding == binding }) {
				return "", "", fail(CodeNotFound, "satisfy observer requirement: workspace %s does not require %s of collaborators with the %s role (see listObserverRequirements)", m.Name, binding, c.Role)
			}
			bound, ok, err := ov.boundAccount(ctx, binding)
			if err != nil {
				return "", "", err
			}
			if !ok {
				return "", "", fail(CodeFailedPrecondition, "satisfy observer requirement: binding %s is gone or its account was disconnected, so it needs nothing of you now", binding)
			}
			if !suits(acct, bound) {
				have, want := ov.k.accountInfo(ctx, acct), ov.k.accountInfo(ctx, bound)
				return "", "", fail(CodeFailedPrecondition, "satisfy observer requirement: your account %s is of gatekeeper %s for %s; %s needs an account of gatekeeper %s for %s (connect one, then pick it)",
					acct.ID, cmp.Or(have.Name, acct.Gatekeeper), acct.Resource, binding, cmp.Or(want.Name, bound.Gatekeeper), bound.Resource)
			}
			if c.Observers[binding] == accountID {
				return "", "", nil
			}
			c.Observers = maps.Clone(c.Observers)
			if c.Observers == nil {
				c.Observers = map[string]string{}
			}
			c.Observers[binding] = accountID
			m.Collaborators[i] = c
			return binding, "account " + accountID, nil
		})
	})
}
