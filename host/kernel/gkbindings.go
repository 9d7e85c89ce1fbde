package kernel

import (
	"atelier/host/capability/outboundhttp"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"atelier/host/capability/kv"
	"atelier/host/gatekeeper"
	"atelier/host/runtime/wit"
	"atelier/host/store"
)

// A gadget reaches a gatekeeper through atelier:host/bindings: Workspace.BindGatekeeper maps a
// binding name to one of the binder's connected accounts, and each call of the binding is a
// call of a session of that account's gatekeeper, opened for caller "gadget:NAME". Every call
// first finds the binding in the gadget's current record and the account in the store, so
// that unbinding or disconnecting the account fails the next call and closes the session.

// linkKey names one gatekeeper binding of one gadget.
type linkKey struct {
	gadget store.GadgetID
	name   string
}

// link is the live gatekeeper instance and session of a binding.
type link struct {
	account string
	inst    *gatekeeper.Instance
	sess    *gatekeeper.Session
}

// links are an overseer's live gatekeeper bindings.
type links struct {
	mu sync.Mutex
	m  map[linkKey]*link
}

// get returns the live link of key on account, starting it with start when there is none (or
// it served another account).
func (ls *links) get(key linkKey, account string, start func() (*link, error)) (*link, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.m[key]; l != nil {
		if l.account == account {
			return l, nil
		}
		l.inst.Close()
		delete(ls.m, key)
	}
	l, err := start()
	if err != nil {
		return nil, err
	}
	ls.m[key] = l
	return l, nil
}

// cut closes the link of key, if any.
func (ls *links) cut(key linkKey) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.m[key]; l != nil {
		l.inst.Close()
		delete(ls.m, key)
	}
}

// closeAll closes every link.
func (ls *links) closeAll() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for key, l := range ls.m {
		l.inst.Close()
		delete(ls.m, key)
	}
}

// callGatekeeper calls method of gadget g's gatekeeper binding name, bound to account.
func (ov *overseer) callGatekeeper(ctx context.Context, g store.Gadget, name, account, method string, args []any) (any, error) {
	key := linkKey{g.ID, name}
	acct, err := ov.k.st.Account(ctx, account)
	if err != nil {
		ov.links.cut(key)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fail(CodeFailedPrecondition, "binding %q: its gatekeeper account was disconnected", name)
		}
		return nil, wrapErr(err, "binding %q", name)
	}
	l, err := ov.links.get(key, account, func() (*link, error) { return ov.openLink(ctx, "gadget:"+g.Name, acct) })
	if err != nil {
		return nil, wrapErr(err, "binding %q", name)
	}
	return invokeSession(ctx, l.sess, name, method, args)
}

// invokeSession calls method of a gatekeeper session with args as the JSON array the session
// API takes, and decodes its JSON result; name is the binding, for errors.
func invokeSession(ctx context.Context, sess *gatekeeper.Session, name, method string, args []any) (any, error) {
	if args == nil {
		args = []any{}
	}
	in, err := json.Marshal(args)
	if err != nil {
		return nil, fail(CodeInvalidArgument, "binding %q: arguments are not JSON: %v", name, err)
	}
	out, err := sess.Call(ctx, method, string(in))
	if errors.Is(err, wit.ErrTooLarge) {
		return nil, wrapErr(tooLarge(err, "its response"), "binding %q: %s", name, method)
	}
	if errors.Is(err, gatekeeper.ErrUnavailable) {
		return nil, &Error{Code: CodeUnavailable, Msg: "binding " + name + ": " + method + ": " + err.Error(), Err: err}
	}
	if err != nil {
		return nil, &Error{Code: CodeGadgetError, Msg: "binding " + name + ": " + method + ": " + err.Error(), Err: err}
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, fail(CodeGadgetError, "binding %q: %s returned invalid JSON: %v", name, method, err)
	}
	return v, nil
}

// startInstance starts an instance of the account's gatekeeper whose observations and
// actions go to the workspace's queue and whose kv is the account's durable state.
func (ov *overseer) startInstance(ctx context.Context, acct store.GatekeeperAccount) (*gatekeeper.Instance, error) {
	return ov.startInstanceWith(ctx, acct, ov.queue, ov.accountState(acct))
}

// accountState is the durable kv state of a gatekeeper account.
func (ov *overseer) accountState(acct store.GatekeeperAccount) *accountKV {
	return &accountKV{st: ov.k.st, account: acct.ID, quota: ov.k.cfg.GadgetQuota}
}

// startInstanceWith starts an instance of the account's gatekeeper whose observations and
// actions go to q and whose kv is state (a dry run's are its own, dryexec.go).
func (ov *overseer) startInstanceWith(ctx context.Context, acct store.GatekeeperAccount, q gatekeeper.Queue, state kv.Store) (*gatekeeper.Instance, error) {
	gk, err := ov.k.gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return nil, err
	}
	var creds map[string]string
	var token outboundhttp.TokenSource
	if gk.Package.Manifest.OAuth != nil {
		token = accountToken{k: ov.k, account: acct.ID}
	} else if creds, err = ov.k.openCredentials(acct); err != nil {
		return nil, err
	}
	return gk.Start(ctx, gatekeeper.Account{Name: acct.ID, Resource: acct.Resource, Credentials: creds, Token: token, Queue: q, Store: state, Limits: ov.k.cfg.Limits,
		Memory: ov.newAccount(nil)})
}

// openLink starts an instance of the account's gatekeeper and opens a session for caller
// ("gadget:NAME", or a principal's name).
func (ov *overseer) openLink(ctx context.Context, caller string, acct store.GatekeeperAccount) (*link, error) {
	inst, err := ov.startInstance(ctx, acct)
	if err != nil {
		return nil, err
	}
	return openSession(ctx, inst, caller, acct)
}

// openSession opens a session of inst, an instance of the account's gatekeeper, for caller;
// inst is closed when that fails.
func openSession(ctx context.Context, inst *gatekeeper.Instance, caller string, acct store.GatekeeperAccount) (*link, error) {
	sess, err := inst.OpenSession(ctx, caller)
	if err != nil {
		inst.Close()
		return nil, err
	}
	return &link{account: acct.ID, inst: inst, sess: sess}, nil
}

// bindGatekeeper lets gadget id reach account under name (account "" removes the binding) and
// closes the binding's live session.
func (ov *overseer) bindGatekeeper(ctx context.Context, p *principal, id store.GadgetID, name, account string) error {
	action := "gadget.bindGatekeeper"
	if account == "" {
		action = "gadget.unbindGatekeeper"
	}
	// The binding's hooks go in the same commit when it is removed or bound to another account
	// (hooks.go): they were registered with the old account.
	var gone []store.Hook
	stale := func(h store.Hook) bool { return h.Gadget == id && h.Binding == name && h.Account != account }
	_, err := ov.updateGadget(ctx, p, id, action, false, func(g *store.Gadget) ([]store.Mutation, string, error) {
		var err error
		if gone, err = ov.hooksWhere(stale); err != nil {
			return nil, "", err
		}
		muts := hookMutations(gone, p.name(), "its binding was removed or bound to another account")
		gks := make(map[string]string, len(g.Gatekeepers)+1)
		for k, v := range g.Gatekeepers {
			gks[k] = v
		}
		g.Gatekeepers = gks
		if account == "" {
			if _, ok := gks[name]; !ok {
				return nil, "", fail(CodeNotFound, "gadget %s has no gatekeeper binding %q", g.Name, name)
			}
			delete(gks, name)
			return muts, name, nil
		}
		if _, ok := g.Bindings[name]; ok {
			return nil, "", fail(CodeConflict, "gadget %s already binds a gadget as %q", g.Name, name)
		}
		gks[name] = account
		return muts, name + " -> account " + account, nil
	})
	ov.links.cut(linkKey{id, name})
	if err == nil {
		ov.hooksRemoved(gone)
		ov.sweepHooks(ctx, stale, p.name(), "its binding was removed or bound to another account")
	}
	return err
}

// BindGatekeeper lets gadget call the gatekeeper of one of the caller's accounts through
// atelier:host/bindings under name (build role; users only, since the account is theirs). The
// gadget acts with that account for everyone who calls it; its actions wait in this
// workspace's queue for the account's owner.
func (w *Workspace) BindGatekeeper(ctx context.Context, gadget, name, accountID string) error {
	if err := validName("binding", name); err != nil {
		return err
	}
	if w.p.agent != nil {
		return fail(CodeForbidden, "bindGatekeeper: agents may not bind accounts")
	}
	if _, ok := w.k.userAccount(ctx, w.p.userID, accountID); !ok {
		return fail(CodeNotFound, "bindGatekeeper: you have no account %q", accountID)
	}
	return w.enter(ctx, store.RoleBuild, "bindGatekeeper", func(ov *overseer) error {
		g, err := ov.gadgetByName(gadget)
		if err != nil {
			return err
		}
		return ov.bindGatekeeper(ctx, w.p, g.ID, name, accountID)
	})
}

// UnbindGatekeeper removes a gatekeeper binding; its live session is closed.
func (w *Workspace) UnbindGatekeeper(ctx context.Context, gadget, name string) error {
	return w.enter(ctx, store.RoleBuild, "unbindGatekeeper", func(ov *overseer) error {
		g, err := w.scopedGadget(ov, gadget)
		if err != nil {
			return err
		}
		return ov.bindGatekeeper(ctx, w.p, g.ID, name, "")
	})
}

// GatekeeperBindingInfo describes one gatekeeper binding of a gadget: the account it acts with,
// whose user connected it, and the account's gatekeeper and resource. Missing is set when the
// account was disconnected (the binding's calls fail until it is unbound or bound again).
type GatekeeperBindingInfo struct {
	Gadget     string `json:"gadget"`
	Name       string `json:"name"`
	Account    string `json:"account"`
	Owner      string `json:"owner,omitempty"`
	Gatekeeper string `json:"gatekeeper,omitempty"` // the gatekeeper's name
	Resource   string `json:"resource,omitempty"`
	Missing    bool   `json:"missing,omitempty"`
}

// ListGatekeeperBindings lists the gatekeeper bindings of the workspace's gadgets (an agent's:
// those in its scope), by gadget and name. Role use: the bindings act for everyone who calls
// the gadget, so whoever may call it may see with which account; the account's resource (a URL,
// which may itself grant access) is shown only to callers with the build role.
func (w *Workspace) ListGatekeeperBindings(ctx context.Context) ([]GatekeeperBindingInfo, error) {
	var out []GatekeeperBindingInfo
	err := w.enterAs(ctx, store.RoleUse, "listGatekeeperBindings", func(ov *overseer, role store.Role) error {
		out = []GatekeeperBindingInfo{} // the callback runs again if the overseer stopped meanwhile
		gs, err := ov.gadgetsOf(w.p)
		if err != nil {
			return err
		}
		gks, err := w.k.st.Gatekeepers(ctx)
		if err != nil {
			return err
		}
		names := make(map[string]string, len(gks)) // gatekeeper id -> name
		for _, gk := range gks {
			names[gk.ID] = gk.Name
		}
		withResource := role.Allows(store.RoleBuild)
		for _, g := range gs {
			for name, account := range g.Gatekeepers {
				info, err := w.k.gatekeeperBinding(ctx, g.Name, name, account, names)
				if err != nil {
					return err
				}
				if !withResource {
					info.Resource = ""
				}
				out = append(out, info)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b GatekeeperBindingInfo) int {
		return cmp.Or(strings.Compare(a.Gadget, b.Gadget), strings.Compare(a.Name, b.Name))
	})
	return out, wrapErr(err, "list gatekeeper bindings")
}

// gatekeeperBinding describes binding name of gadget to account; gatekeepers names the
// installed gatekeepers by id (a removed one leaves the name blank).
func (k *Kernel) gatekeeperBinding(ctx context.Context, gadget, name, account string, gatekeepers map[string]string) (GatekeeperBindingInfo, error) {
	info := GatekeeperBindingInfo{Gadget: gadget, Name: name, Account: account}
	acct, err := k.st.Account(ctx, account)
	if errors.Is(err, store.ErrNotFound) {
		info.Missing = true
		return info, nil
	}
	if err != nil {
		return info, wrapErr(err, "binding %s.%s", gadget, name)
	}
	info.Owner, info.Resource, info.Gatekeeper = k.username(ctx, acct.Owner), acct.Resource, gatekeepers[acct.Gatekeeper]
	return info, nil
}
