package kernel

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"atelier/host/gatekeeper"
	"atelier/host/runtime/wit/tsdecl"
	"atelier/host/store"
)

// Gatekeepers in Code Mode: a snippet's env may hold gatekeeper accounts next to gadgets. An
// agent gets those its scope names for the workspace (ScopeEntry.Gatekeepers), a user those
// it names in executeCode's options; either way the accounts are the user's own. env.NAME is
// a session of the account's gatekeeper opened for the caller (queue entries and audit lines
// name it), started on the first call and closed when the snippet ends. Only gatekeepers
// whose manifest declares a session API (Manifest.Session) can be bound: its methods are the
// binding's methods.

// gatekeeperBinding is one gatekeeper account handed to a snippet.
type gatekeeperBinding struct {
	w       *Workspace
	name    string
	account store.GatekeeperAccount
	gk      *gatekeeper.Gatekeeper
	log     *callLog
	dry     *dryExec // the dry run whose session it calls (nil: the workspace's)
	// methods are the session's methods when the gatekeeper's guest lists them itself
	// (gatekeeper.Gatekeeper.DynamicSession: an MCP server's tools); nil: the manifest's.
	methods []string

	mu     sync.Mutex
	l      *link // started by the first call
	closed bool
}

// Methods implements jsruntime.Binding: the methods the manifest's session API declares, or
// those the guest lists (an MCP server's tools).
func (b *gatekeeperBinding) Methods() []string {
	if b.methods != nil {
		return b.methods
	}
	return b.gk.Package.Manifest.Session.Methods
}

// Call implements jsruntime.Binding: the caller's role, agent scope and account are checked
// again, then method runs on the binding's session, bounded by the call timeout.
func (b *gatekeeperBinding) Call(ctx context.Context, method string, args []any) (any, error) {
	b.log.add(b.name + "." + method)
	if !slices.Contains(b.Methods(), method) {
		return nil, fail(CodeNotFound, "%s has no method %q", b.name, method)
	}
	ctx, cancel := context.WithTimeout(ctx, b.w.k.callTimeout())
	defer cancel()
	var res any
	err := b.w.enter(ctx, store.RoleUse, "call", func(ov *overseer) error {
		if _, err := b.w.p.checkAccount(ctx, b.w.id, b.name, b.account.ID); err != nil {
			return err
		}
		l, err := b.session(ctx, ov)
		if err != nil {
			return err
		}
		res, err = invokeSession(b.dry.tag(ctx, b.name, method, args), l.sess, b.name, method, args)
		return err
	})
	if err != nil {
		return nil, wrapErr(err, "%s.%s", b.name, method)
	}
	return res, nil
}

// session returns the binding's live session, opening one for the caller on first use.
func (b *gatekeeperBinding) session(ctx context.Context, ov *overseer) (*link, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fail(CodeFailedPrecondition, "binding %q: the snippet has ended", b.name)
	}
	if b.dry != nil {
		l, err := b.dry.link(ctx, ov, linkKey{name: b.name}, b.w.p.name(), b.account)
		return l, wrapErr(err, "binding %q", b.name)
	}
	if b.l == nil {
		l, err := ov.openLink(ctx, b.w.p.name(), b.account)
		if err != nil {
			return nil, wrapErr(err, "binding %q", b.name)
		}
		b.l = l
	}
	return b.l, nil
}

// close ends the binding's session and instance; later calls fail.
func (b *gatekeeperBinding) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.l != nil {
		b.l.inst.Close()
		b.l = nil
	}
}

// info describes the binding for listBindings.
func (b *gatekeeperBinding) info() BindingInfo {
	return BindingInfo{Name: b.name, Gatekeeper: b.gk.Package.Manifest.Name, Account: b.account.ID, Resource: b.account.Resource, Methods: b.Methods()}
}

// declare returns TypeScript declarations of the binding: the gatekeeper's own types, then
// env.NAME as the session interface the manifest names.
func (b *gatekeeperBinding) declare(ctx context.Context) (string, error) {
	s := b.gk.Package.Manifest.Session
	header := fmt.Sprintf("// env.%s calls gatekeeper %q on %s with account %s: reads are recorded, changes wait in the workspace's approval queue.\n",
		b.name, b.gk.Package.Manifest.Name, b.account.Resource, b.account.ID)
	if s.Type == "" {
		return header + tsdecl.DeclareUntyped(b.name, s.Methods), nil
	}
	var types string
	err := b.w.enter(ctx, store.RoleUse, "describeBinding", func(ov *overseer) error {
		inst, err := ov.startInstance(ctx, b.account)
		if err != nil {
			return err
		}
		defer inst.Close()
		types, err = inst.TypeScriptTypes(ctx)
		return err
	})
	if err != nil {
		return "", wrapErr(err, "describe binding %q", b.name)
	}
	return fmt.Sprintf("%s%s\ndeclare const %s: %s;\n", header, types, b.name, s.Type), nil
}

// checkAccount returns account, bound under name, if p may still use it in workspace ws:
// it refuses an account that was disconnected or is not p's owner's, or (for an agent) that
// its scope does not bind under name in ws.
func (p *principal) checkAccount(ctx context.Context, ws store.WorkspaceID, name, account string) (store.GatekeeperAccount, error) {
	if p.agent != nil && p.agent.Scope.Workspaces[ws].Gatekeepers[name] != account {
		return store.GatekeeperAccount{}, fail(CodeForbidden, "agent %s may not use gatekeeper binding %q (outside its scope)", p.agent.Name, name)
	}
	acct, ok := p.k.userAccount(ctx, p.userID, account)
	if !ok {
		return store.GatekeeperAccount{}, fail(CodeFailedPrecondition, "binding %q: its gatekeeper account was disconnected", name)
	}
	return acct, nil
}

// gatekeeperBindings resolves the gatekeeper bindings of a snippet (name -> account id) to
// accounts of p's user whose gatekeepers declare a session API.
func (w *Workspace) gatekeeperBindings(ctx context.Context, want map[string]string, log *callLog, dry *dryExec) (map[string]*gatekeeperBinding, error) {
	out := make(map[string]*gatekeeperBinding, len(want))
	for name, id := range want {
		acct, err := w.p.checkAccount(ctx, w.id, name, id)
		if err != nil {
			return nil, err
		}
		gk, err := w.k.sessionGatekeeper(ctx, name, acct)
		if err != nil {
			return nil, err
		}
		b := &gatekeeperBinding{w: w, name: name, account: acct, gk: gk, log: log, dry: dry}
		if gk.DynamicSession() {
			if b.methods, err = w.k.sessionMethods(ctx, gk, acct); err != nil {
				return nil, wrapErr(err, "gatekeeper binding %q", name)
			}
		}
		out[name] = b
	}
	return out, nil
}

// validGatekeeperBindings checks the gatekeeper bindings a user names (for an agent's scope or
// one snippet): their number, names and accounts, which must be the user's and have a
// gatekeeper that declares a session API.
func (k *Kernel) validGatekeeperBindings(ctx context.Context, userID string, bindings map[string]string) error {
	if len(bindings) > maxCodeGatekeepers {
		return fail(CodeInvalidArgument, "%d gatekeeper bindings: at most %d", len(bindings), maxCodeGatekeepers)
	}
	for name, id := range bindings {
		if err := validName("binding", name); err != nil {
			return err
		}
		acct, ok := k.userAccount(ctx, userID, id)
		if !ok {
			return fail(CodeNotFound, "gatekeeper binding %q: you have no account %q (see listAccounts)", name, id)
		}
		if _, err := k.sessionGatekeeper(ctx, name, acct); err != nil {
			return err
		}
	}
	return nil
}

// sessionGatekeeper returns the gatekeeper of acct, bound under name, which must declare a
// session API.
func (k *Kernel) sessionGatekeeper(ctx context.Context, name string, acct store.GatekeeperAccount) (*gatekeeper.Gatekeeper, error) {
	gk, err := k.gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return nil, wrapErr(err, "gatekeeper binding %q", name)
	}
	if gk.Package.Manifest.Session == nil {
		return nil, fail(CodeFailedPrecondition, "gatekeeper binding %q: gatekeeper %s declares no session API for Code Mode (its manifest has no \"session\"); bind it to a gadget instead", name, gk.Package.Manifest.Name)
	}
	return gk, nil
}

// maxCodeGatekeepers bounds the gatekeeper bindings of one scope entry or snippet.
const maxCodeGatekeepers = 32
