package kernel

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"atelier/host/auth"
	"atelier/host/capability/hooks"
	"atelier/host/gatekeeper"
	"atelier/host/runtime/wit"
	"atelier/host/store"
	"atelier/internal/membudget"
)

// Hooks (docs/api.md, "Hooks") let a gatekeeper call a gadget back. A gadget registers a hook
// (through atelier:host/hooks, or a builder through registerHook) for an event of the
// gatekeeper behind one of its gatekeeper bindings and names one of its exports; the hook is a
// durable record of the workspace (store.Hook) with a server-wide index, so it survives
// restarts and, in a cluster, failover. An event comes from one of three sources, as the
// manifest declares: a webhook the service POSTs to /hooks/<id> (hooksin.go), a poll the
// scheduler makes, or a notification a watch pushes (hookloops.go). Each fire calls the
// export with the event's payload through the workspace's overseer, as the hook's creator,
// whose authority is checked again first (runTarget, as for schedules). A hook whose gadget,
// binding or account is gone is removed: eagerly when they go, and lazily when it fires.

// Bounds of hooks.
const (
	maxHooksPerGadget    = 50
	maxHooksPerWorkspace = 200
	maxHookParams        = 4 << 10
)

// HooksGrant is the grant that lets a gadget register hooks (atelier:host/hooks).
const HooksGrant = hooks.Grant

// HookPath is the path of the public route that receives webhook hooks' requests (HookPath
// followed by the hook's id).
const HookPath = "/hooks/"

// HookInfo describes a hook; the secret is never part of it.
type HookInfo struct {
	ID         string    `json:"id"`
	Gadget     string    `json:"gadget"`
	GadgetName string    `json:"gadgetName"`
	Binding    string    `json:"binding"`
	Gatekeeper string    `json:"gatekeeper"` // the gatekeeper's name ("" once it is removed)
	Event      string    `json:"event"`
	Method     string    `json:"method"`
	Params     string    `json:"params"`
	Source     string    `json:"source"`
	URL        string    `json:"url"`
	Creator    string    `json:"creator"`
	Created    time.Time `json:"created"`
	Fires      int64     `json:"fires"`
	LastFire   time.Time `json:"lastFire,omitzero"`
	LastError  string    `json:"lastError,omitempty"`
}

// hookState is the kernel's state of hooks: the URL base, the inbound limits, and the poll and
// notify loops (hookloops.go).
type hookState struct {
	mu   sync.Mutex // guards base, watches and polling
	base string     // the URL base when Config.PublicURL is empty (SetHookBase)
	// rate limits each hook's inbound deliveries; refusals its requests that fail the
	// signature check, per sending address (hookRefusals); inflight bounds the deliveries
	// handled at once, server-wide and per sending network (a quarter of them, so that one
	// sender's slow bodies cannot take every delivery's place).
	rate, refusals *auth.Rate
	inflight       *membudget.Budget
	// watches are the notify hooks watched on this node; polling the poll hooks being polled.
	watches map[string]*hookWatch
	polling map[string]bool
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // unsubscriptions and fires started by watches
	peers   hookPeers      // sessions forwarding deliveries to other nodes
}

// hookRefusals bounds the requests per hook and sending address that fail the signature
// check: 20 at once, then one a second (the keys tracked are bounded by auth.Rate).
var hookRefusals = auth.RateConfig{Every: time.Second, Burst: 20}

func newHookState(cfg Config) hookState {
	ctx, cancel := context.WithCancel(context.Background())
	every := time.Duration(float64(time.Second) / cfg.HookRate)
	return hookState{rate: auth.NewRate(auth.RateConfig{Every: max(every, time.Microsecond), Burst: cfg.HookBurst}, cfg.Now),
		refusals: auth.NewRate(hookRefusals, cfg.Now),
		inflight: membudget.New(int64(cfg.HookInflight), int64(max(1, cfg.HookInflight/4))),
		watches:  map[string]*hookWatch{}, polling: map[string]bool{}, ctx: ctx, cancel: cancel}
}

// SetHookBase sets the URL base of hook URLs ("http://127.0.0.1:8080") used when
// Config.PublicURL is empty (atelier serve: its listener's address).
func (k *Kernel) SetHookBase(base string) {
	k.hooks.mu.Lock()
	k.hooks.base = strings.TrimSuffix(base, "/")
	k.hooks.mu.Unlock()
}

// hookURL is the public URL of hook h when it is a webhook; other hooks have none ("").
func (k *Kernel) hookURL(h store.Hook) string {
	if h.Source != gatekeeper.HookWebhook {
		return ""
	}
	base := strings.TrimSuffix(k.cfg.PublicURL, "/")
	if base == "" {
		k.hooks.mu.Lock()
		base = k.hooks.base
		k.hooks.mu.Unlock()
	}
	return base + HookPath + h.ID
}

// newHookID returns "hk_" and 24 random base32 characters (120 bits: it is in the URL).
func newHookID() string {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		panic("kernel: no randomness: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return "hk_" + strings.ToLower(base32.StdEncoding.EncodeToString(b))
}

// validHookID reports whether id has the shape newHookID gives.
func validHookID(id string) bool {
	rest, ok := strings.CutPrefix(id, "hk_")
	if !ok || len(rest) != 24 {
		return false
	}
	for _, c := range rest {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// hookSealContext binds a hook's sealed secret to the hook.
func hookSealContext(id string) string { return "hook/" + id }

// gkHook is what the gatekeeper learns of h (its secret opened).
func (k *Kernel) gkHook(h store.Hook) (gatekeeper.Hook, error) {
	gh := gatekeeper.Hook{ID: h.ID, Event: h.Event, Params: h.Params, URL: k.hookURL(h)}
	if len(h.Secret) > 0 {
		box, err := k.box()
		if err != nil {
			return gh, err
		}
		if gh.Secret, err = box.Open(h.Secret, hookSealContext(h.ID)); err != nil {
			return gh, wrapErr(err, "hook %s: its secret", h.ID)
		}
	}
	return gh, nil
}

// hookLinkKey names the live gatekeeper session that receives and polls h's events: a session
// of its own (caller "hook:<id>"), beside the gadget binding's.
func hookLinkKey(h store.Hook) linkKey { return linkKey{h.Gadget, "\x00hook:" + h.ID} }

// hookSession returns h's live session, opening it on the hook's account when there is none.
func (ov *overseer) hookSession(ctx context.Context, h store.Hook) (*gatekeeper.Session, error) {
	acct, err := ov.k.st.Account(ctx, h.Account)
	if err != nil {
		return nil, err
	}
	l, err := ov.links.get(hookLinkKey(h), h.Account, func() (*link, error) { return ov.openLink(ctx, "hook:"+h.ID, acct) })
	if err != nil {
		return nil, err
	}
	return l.sess, nil
}

// hook returns hook id of the workspace, or NOT_FOUND.
func (ov *overseer) hook(id string) (store.Hook, error) {
	all, err := ov.ws.Hooks()
	return byID(all, err, id, func(h store.Hook) string { return h.ID }, "hook")
}

// hooksWhere returns the workspace's hooks that match.
func (ov *overseer) hooksWhere(match func(store.Hook) bool) ([]store.Hook, error) {
	all, err := ov.ws.Hooks()
	return slices.DeleteFunc(all, func(h store.Hook) bool { return !match(h) }), err
}

// hookMutations are the deletions of hs, each with an audit line by actor saying why.
func hookMutations(hs []store.Hook, actor, reason string) []store.Mutation {
	var muts []store.Mutation
	for _, h := range hs {
		muts = append(muts, store.DeleteHook(h.ID), auditLine(actor, "hook.remove", h.ID, h.Event+" -> "+h.Method+": "+reason))
	}
	return muts
}

// hookRequest is a registration.
type hookRequest struct {
	binding, event, method, params string
	// creator is the user the hook fires as ("": the owner of the binding's account, for a
	// gadget registering its own hook); actor names the registrant in the audit log.
	creator, actor string
}

// registerHook checks r against gadget g (the binding, the gatekeeper's event, the export,
// the bounds), lets the binding's gatekeeper subscribe it, and stores it. It returns the hook
// and its secret in clear (webhook hooks), which only the registrant sees.
func (ov *overseer) registerHook(ctx context.Context, g store.Gadget, r hookRequest) (store.Hook, []byte, error) {
	k := ov.k
	account, ok := g.Gatekeepers[r.binding]
	if !ok {
		return store.Hook{}, nil, fail(CodeNotFound, "gadget %s has no gatekeeper binding %q (bind one with bindGatekeeper first)", g.Name, r.binding)
	}
	acct, err := k.st.Account(ctx, account)
	if errors.Is(err, store.ErrNotFound) {
		return store.Hook{}, nil, fail(CodeFailedPrecondition, "binding %q: its gatekeeper account was disconnected; bind the gadget to a connected account", r.binding)
	} else if err != nil {
		return store.Hook{}, nil, wrapErr(err, "binding %q", r.binding)
	}
	gk, err := k.gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return store.Hook{}, nil, wrapErr(err, "binding %q", r.binding)
	}
	m := gk.Package.Manifest
	spec, ok := m.HookSpec(r.event)
	if !ok {
		var events []string
		for _, s := range m.Hooks {
			events = append(events, s.Event)
		}
		if len(events) == 0 {
			return store.Hook{}, nil, fail(CodeInvalidArgument, "gatekeeper %s (binding %q) declares no hook events", m.Name, r.binding)
		}
		return store.Hook{}, nil, fail(CodeInvalidArgument, "gatekeeper %s (binding %q) has no hook event %q; its events: %s", m.Name, r.binding, r.event, strings.Join(events, ", "))
	}
	a, err := ov.actor(ctx, g.ID)
	if err != nil {
		return store.Hook{}, nil, err
	}
	fn, ok := a.exports[r.method]
	if !ok {
		return store.Hook{}, nil, fail(CodeNotFound, "gadget %s has no exported function %q", g.Name, r.method)
	}
	if err := fn.checkJSON(r.method, []any{nil}); err != nil {
		return store.Hook{}, nil, fail(CodeInvalidArgument, "a hook's method takes one argument, the event's payload: %v", err)
	}
	if len(r.params) > maxHookParams {
		return store.Hook{}, nil, fail(CodeInvalidArgument, "hook params of %d bytes exceed %d", len(r.params), maxHookParams)
	}
	if r.params != "" && !json.Valid([]byte(r.params)) {
		return store.Hook{}, nil, fail(CodeInvalidArgument, "hook params must be JSON text (or empty)")
	}
	if err := ov.checkHookBounds(g); err != nil {
		return store.Hook{}, nil, err
	}
	now := time.Now().UTC()
	h := store.Hook{ID: newHookID(), Gadget: g.ID, Method: r.method, Binding: r.binding, Account: account, Event: r.event, Params: r.params,
		Source: spec.Source, Creator: cmp.Or(r.creator, acct.Owner), Created: now}
	var secret []byte
	switch spec.Source {
	case gatekeeper.HookWebhook:
		secret = make([]byte, gatekeeper.HookSecretSize)
		if _, err := rand.Read(secret); err != nil {
			return store.Hook{}, nil, err
		}
		box, err := k.box()
		if err != nil {
			return store.Hook{}, nil, wrapErr(err, "register hook")
		}
		h.Secret = box.Seal(secret, hookSealContext(h.ID))
	case gatekeeper.HookPoll:
		h.EveryMs = max(spec.MinEveryMs, pollEvery(r.params))
		h.Next = now.Add(time.Duration(h.EveryMs) * time.Millisecond)
	}
	gh := gatekeeper.Hook{ID: h.ID, Event: h.Event, Params: h.Params, URL: k.hookURL(h), Secret: secret}
	l, err := ov.links.get(linkKey{g.ID, r.binding}, account, func() (*link, error) { return ov.openLink(ctx, "gadget:"+g.Name, acct) })
	if err != nil {
		return store.Hook{}, nil, wrapErr(err, "binding %q", r.binding)
	}
	if err := l.sess.SubscribeHook(ctx, gh); err != nil {
		return store.Hook{}, nil, fail(CodeFailedPrecondition, "gatekeeper %s refused the hook for %q: %v", m.Name, r.event, err)
	}
	ov.hookMu.Lock()
	err = ov.checkHookBounds(g)
	if err == nil {
		err = ov.write(ctx, store.PutHook(h), auditLine(r.actor, "hook.register", g.Name, fmt.Sprintf("%s %s %s -> %s", h.ID, r.binding, r.event, r.method)))
	}
	ov.hookMu.Unlock()
	if err != nil {
		_ = ov.unsubscribeLater(h, gh)
		return store.Hook{}, nil, wrapErr(err, "register hook")
	}
	// The binding may have gone while the gatekeeper subscribed: such a hook goes at once.
	if cur, err := ov.gadget(g.ID); err != nil || cur.Gatekeepers[r.binding] != account {
		_ = ov.removeHooks(ctx, []store.Hook{h}, "hooks", "its binding went while it was registered")
		return store.Hook{}, nil, fail(CodeFailedPrecondition, "binding %q changed while the hook was registered; register it again", r.binding)
	}
	if h.Source == gatekeeper.HookNotify {
		k.watchHook(ov, h)
	}
	return h, secret, nil
}

// pollEvery is the everyMs of a poll hook's params (0 when none).
func pollEvery(params string) int64 {
	var p struct {
		EveryMs int64 `json:"everyMs"`
	}
	if params != "" && json.Unmarshal([]byte(params), &p) == nil && p.EveryMs > 0 {
		return p.EveryMs
	}
	return 0
}

// checkHookBounds refuses one more hook of g past the bounds.
func (ov *overseer) checkHookBounds(g store.Gadget) error {
	all, err := ov.ws.Hooks()
	if err != nil {
		return err
	}
	if len(all) >= maxHooksPerWorkspace {
		return fail(CodeFailedPrecondition, "register hook: workspace %s has %d hooks already (the most); remove some first", ov.id, len(all))
	}
	n := 0
	for _, h := range all {
		if h.Gadget == g.ID {
			n++
		}
	}
	if n >= maxHooksPerGadget {
		return fail(CodeFailedPrecondition, "register hook: gadget %s has %d hooks already (the most); remove some first", g.Name, n)
	}
	return nil
}

// removeHooks deletes hs (one commit, an audit line each by actor saying why), stops their
// watches and sessions and lets their gatekeepers unsubscribe them, best effort.
func (ov *overseer) removeHooks(ctx context.Context, hs []store.Hook, actor, reason string) error {
	_, err := ov.removeHooksWait(ctx, hs, actor, reason)
	return err
}

// removeHooksWait is removeHooks that also returns the channels of the unsubscriptions.
func (ov *overseer) removeHooksWait(ctx context.Context, hs []store.Hook, actor, reason string) ([]<-chan struct{}, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	ov.hookMu.Lock()
	err := ov.write(ctx, hookMutations(hs, actor, reason)...)
	ov.hookMu.Unlock()
	if err != nil {
		return nil, err
	}
	return ov.hooksRemoved(hs), nil
}

// hooksRemoved ends what removed hooks hs leave running: their watches and sessions; their
// gatekeepers are told to unsubscribe them, best effort. The channels it returns are closed
// once each unsubscription ended.
func (ov *overseer) hooksRemoved(hs []store.Hook) []<-chan struct{} {
	var done []<-chan struct{}
	for _, h := range hs {
		ov.k.unwatchHook(h.ID)
		ov.links.cut(hookLinkKey(h))
		if gh, err := ov.k.gkHook(h); err == nil {
			done = append(done, ov.unsubscribeLater(h, gh))
		}
	}
	return done
}

// sweepHooks removes the hooks that match, after a change that removed them in its own commit:
// a fire recorded in between may have written one back.
func (ov *overseer) sweepHooks(ctx context.Context, match func(store.Hook) bool, actor, reason string) {
	hs, err := ov.hooksWhere(match)
	if err == nil {
		err = ov.removeHooks(ctx, hs, actor, reason)
	}
	if err != nil && !errors.Is(err, errStopped) {
		ov.k.log.Warn("remove hooks", "workspace", ov.id, "err", err)
	}
}

// unsubscribeLater lets the gatekeeper of h's account undo h (delete the service's webhook),
// on a session of its own, best effort: an account that is gone is not reached. The channel
// is closed when it ended.
func (ov *overseer) unsubscribeLater(h store.Hook, gh gatekeeper.Hook) <-chan struct{} {
	k := ov.k
	done := make(chan struct{})
	k.hooks.wg.Add(1)
	go func() {
		defer k.hooks.wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(k.hooks.ctx, k.callTimeout())
		defer cancel()
		acct, err := k.st.Account(ctx, h.Account)
		if err != nil {
			return
		}
		l, err := ov.openLink(ctx, "hook:"+h.ID, acct)
		if err != nil {
			k.log.Info("unsubscribe hook (best effort)", "hook", h.ID, "err", err)
			return
		}
		defer l.inst.Close()
		if err := l.sess.UnsubscribeHook(ctx, gh); err != nil && !errors.Is(err, gatekeeper.ErrNoHooks) {
			k.log.Info("unsubscribe hook (best effort)", "hook", h.ID, "err", err)
		}
	}()
	return done
}

// hookTarget checks that h may still fire: runTarget's checks of its creator and gadget, then
// its binding (still on the same account) and the account. It returns the principal the fire
// acts as and the gadget; or why the hook must end; or an error that leaves it for later.
func (ov *overseer) hookTarget(ctx context.Context, h store.Hook) (p *principal, rec store.Gadget, reason string, err error) {
	if p, rec, reason, err = ov.runTarget(ctx, h.Creator, "", h.Gadget, "hook"); err != nil || reason != "" {
		return p, rec, reason, err
	}
	if rec.Gatekeepers[h.Binding] != h.Account {
		return nil, rec, "its binding was removed or bound to another account", nil
	}
	if _, err := ov.k.st.Account(ctx, h.Account); errors.Is(err, store.ErrNotFound) {
		return nil, rec, "its account was disconnected", nil
	} else if err != nil {
		return nil, rec, "", err
	}
	return p, rec, "", nil
}

// errHookGone is a fire of a hook that no longer exists (or was just removed).
func errHookGone(id, reason string) error {
	return fail(CodeNotFound, "hook %s is gone: %s", id, reason)
}

// fireHook fires hook id with payload (JSON), once the hook may still fire: the poll and
// notify sources' path (a webhook's checks its signature in between, hooksin.go).
func (ov *overseer) fireHook(ctx context.Context, id string, payload []byte, next time.Time) error {
	h, err := ov.hook(id)
	if err != nil {
		return err
	}
	p, rec, reason, err := ov.hookTarget(ctx, h)
	if err != nil {
		return err
	}
	if reason != "" {
		_ = ov.removeHooks(ctx, []store.Hook{h}, "hooks", reason)
		return errHookGone(id, reason)
	}
	return ov.fire(ctx, p, rec, h, payload, next)
}

// fire calls h's method on gadget rec with payload, then records the fire (and a poll hook's
// next poll, when next is set). Its error is the method's.
func (ov *overseer) fire(ctx context.Context, p *principal, rec store.Gadget, h store.Hook, payload []byte, next time.Time) error {
	runErr := ov.runHook(ctx, rec, h, payload)
	if errors.Is(runErr, errStopped) || (runErr != nil && ctx.Err() != nil) {
		return runErr // the workspace or the server stopped before the call
	}
	if err := ov.recordFire(ctx, p, rec.Name, h.ID, true, runErr, next); err != nil && !errors.Is(err, errStopped) {
		ov.k.log.Warn("record hook fire", "workspace", ov.id, "hook", h.ID, "err", err)
	}
	return runErr
}

// runHook makes one call of h's method on gadget rec: the argument is the payload decoded,
// or, for an export whose one parameter is a string, the payload's JSON text.
func (ov *overseer) runHook(ctx context.Context, rec store.Gadget, h store.Hook, payload []byte) error {
	a, err := ov.actor(ctx, rec.ID)
	if err != nil {
		return err
	}
	var arg any
	if err := json.Unmarshal(payload, &arg); err != nil {
		return fail(CodeGadgetError, "hook %s: the gatekeeper's payload is not JSON: %v", h.ID, err)
	}
	fn, ok := a.exports[h.Method]
	if !ok {
		return fail(CodeNotFound, "gadget %s has no exported function %q any more", rec.Name, h.Method)
	}
	if _, isText := arg.(string); !isText && fn.ft != nil && len(fn.ft.Params) == 1 && fn.ft.Params[0].Type.Kind == wit.String {
		arg = string(payload)
	}
	args := []any{arg}
	if err := fn.checkJSON(h.Method, args); err != nil {
		return err
	}
	r, err := a.run(ctx, fn.name, args, nil)
	if err != nil {
		return err
	}
	_, err = r.wait()
	return err
}

// recordFire stores the outcome of a fire (fired: the method ran, with runErr) and a poll
// hook's next poll, unless the hook was removed meanwhile. A failed fire gets an audit line.
func (ov *overseer) recordFire(ctx context.Context, p *principal, gadget, id string, fired bool, runErr error, next time.Time) error {
	ov.hookMu.Lock()
	defer ov.hookMu.Unlock()
	h, err := ov.hook(id)
	if err != nil {
		if errCode(err) == CodeNotFound {
			return nil
		}
		return err
	}
	if !next.IsZero() {
		h.Next = next
	}
	muts := []store.Mutation{store.PutHook(h)}
	if fired || runErr != nil {
		h.LastFire, h.LastError = time.Now().UTC(), ""
		if fired {
			h.Fires++
		}
		if runErr != nil {
			h.LastError = runErr.Error()
			actor := "hooks"
			if p != nil {
				actor = p.name()
			}
			muts = append(muts, auditLine(actor, "hook.fire", gadget, h.Method+": "+h.LastError))
		}
		muts[0] = store.PutHook(h)
	}
	return ov.write(ctx, muts...)
}

// hookInfo describes h; gatekeepers names the installed gatekeepers by id.
func (ov *overseer) hookInfo(ctx context.Context, h store.Hook, gatekeepers map[string]string) HookInfo {
	info := HookInfo{ID: h.ID, Gadget: string(h.Gadget), Binding: h.Binding, Event: h.Event, Method: h.Method, Params: h.Params, Source: h.Source,
		URL: ov.k.hookURL(h), Creator: ov.k.username(ctx, h.Creator), Created: h.Created, Fires: h.Fires, LastFire: h.LastFire, LastError: h.LastError}
	if rec, err := ov.gadget(h.Gadget); err == nil {
		info.GadgetName = rec.Name
	}
	if acct, err := ov.k.st.Account(ctx, h.Account); err == nil {
		info.Gatekeeper = gatekeepers[acct.Gatekeeper]
	}
	return info
}

// gatekeeperNames maps the installed gatekeepers' ids to their names.
func (k *Kernel) gatekeeperNames(ctx context.Context) (map[string]string, error) {
	gks, err := k.st.Gatekeepers(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(gks)+len(k.gks.builtins))
	for id, gk := range k.gks.builtins {
		names[id] = gk.Package.Manifest.Name
	}
	for _, gk := range gks {
		names[gk.ID] = gk.Name
	}
	return names, nil
}

// liveHooks returns the workspace's hooks that match, after removing those whose gadget,
// binding or account is gone (an eager removal that did not happen, say on another node).
func (ov *overseer) liveHooks(ctx context.Context, match func(store.Hook) bool) ([]store.Hook, error) {
	hs, err := ov.hooksWhere(match)
	if err != nil {
		return nil, err
	}
	var live, dead []store.Hook
	reason := ""
	for _, h := range hs {
		_, _, why, err := ov.hookTarget(ctx, h)
		switch {
		case err != nil:
			return nil, err
		case why != "":
			dead, reason = append(dead, h), why
		default:
			live = append(live, h)
		}
	}
	if err := ov.removeHooks(ctx, dead, "hooks", reason); err != nil {
		return nil, err
	}
	return live, nil
}

// RegisterHook registers a hook on gadget (build role; users only: the hook fires as the
// caller): when event of the gatekeeper behind the gadget's binding happens, its export
// method is called with the event's payload. params is a JSON value for the gatekeeper, or
// JSON text in a string (nil: none).
func (w *Workspace) RegisterHook(ctx context.Context, gadget, binding, event, method string, params any) (HookInfo, error) {
	if w.p.agent != nil {
		return HookInfo{}, fail(CodeForbidden, "registerHook: agents may not register hooks (a hook fires as the user who registered it)")
	}
	text, err := hookParams(params)
	if err != nil {
		return HookInfo{}, err
	}
	var info HookInfo
	err = w.enter(ctx, store.RoleBuild, "registerHook", func(ov *overseer) error {
		g, err := w.scopedGadget(ov, gadget)
		if err != nil {
			return err
		}
		h, _, err := ov.registerHook(ctx, g, hookRequest{binding: binding, event: event, method: method, params: text, creator: w.p.userID, actor: w.p.name()})
		if err != nil {
			return err
		}
		names, err := w.k.gatekeeperNames(ctx)
		info = ov.hookInfo(ctx, h, names)
		return err
	})
	return info, wrapErr(err, "register hook on %s", gadget)
}

// hookParams turns registerHook's params into JSON text.
func hookParams(params any) (string, error) {
	switch v := params.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	data, err := json.Marshal(params)
	if err != nil {
		return "", fail(CodeInvalidArgument, "registerHook: params must be a JSON value: %v", err)
	}
	return string(data), nil
}

// ListHooks lists the workspace's hooks, or gadget's ("" for all), in id order (build role;
// an agent sees those of the gadgets in its scope).
func (w *Workspace) ListHooks(ctx context.Context, gadget string) ([]HookInfo, error) {
	out := []HookInfo{}
	err := w.enter(ctx, store.RoleBuild, "listHooks", func(ov *overseer) error {
		out = []HookInfo{}
		var only store.GadgetID
		if gadget != "" {
			g, err := w.scopedGadget(ov, gadget)
			if err != nil {
				return err
			}
			only = g.ID
		}
		hs, err := ov.liveHooks(ctx, func(h store.Hook) bool { return only == "" || h.Gadget == only })
		if err != nil {
			return err
		}
		names, err := w.k.gatekeeperNames(ctx)
		if err != nil {
			return err
		}
		for _, h := range hs {
			info := ov.hookInfo(ctx, h, names)
			if w.p.checkGadget(w.id, info.GadgetName) == nil {
				out = append(out, info)
			}
		}
		return nil
	})
	return out, wrapErr(err, "list hooks")
}

// RemoveHook removes hook id of this workspace (build role); its gatekeeper is told to
// unsubscribe it, best effort.
func (w *Workspace) RemoveHook(ctx context.Context, id string) error {
	err := w.enter(ctx, store.RoleBuild, "removeHook", func(ov *overseer) error {
		h, err := ov.hook(id)
		if err != nil {
			return err
		}
		if rec, err := ov.gadget(h.Gadget); err == nil {
			if err := w.p.checkGadget(w.id, rec.Name); err != nil {
				return err
			}
		}
		return ov.removeHooks(ctx, []store.Hook{h}, w.p.name(), "removed by "+w.p.name())
	})
	return wrapErr(err, "remove hook %s", id)
}

// gadgetHooks is a gadget's atelier:host/hooks: the hooks of the actor's gadget.
type gadgetHooks struct{ a *actor }

// info is the guest's view of h (secret: in the result of register only).
func (gh gadgetHooks) info(h store.Hook, secret []byte) hooks.Info {
	return hooks.Info{ID: h.ID, Binding: h.Binding, Event: h.Event, Method: h.Method, Params: h.Params, Source: h.Source,
		URL: gh.a.ov.k.hookURL(h), Secret: secret, Fires: h.Fires, Error: h.LastError}
}

// RegisterHook implements hooks.Registry: the hook fires as the owner of the binding's account.
func (gh gadgetHooks) RegisterHook(ctx context.Context, binding, event, method, params string) (hooks.Info, error) {
	ov := gh.a.ov
	g, err := ov.gadget(gh.a.id)
	if err != nil {
		return hooks.Info{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, ov.k.callTimeout())
	defer cancel()
	h, secret, err := ov.registerHook(ctx, g, hookRequest{binding: binding, event: event, method: method, params: params, actor: "gadget:" + g.Name})
	if err != nil {
		return hooks.Info{}, err
	}
	return gh.info(h, secret), nil
}

// ListHooks implements hooks.Registry.
func (gh gadgetHooks) ListHooks(ctx context.Context) ([]hooks.Info, error) {
	hs, err := gh.a.ov.hooksWhere(func(h store.Hook) bool { return h.Gadget == gh.a.id })
	out := make([]hooks.Info, 0, len(hs))
	for _, h := range hs {
		out = append(out, gh.info(h, nil))
	}
	return out, err
}

// RemoveHook implements hooks.Registry: only the gadget's own hooks.
func (gh gadgetHooks) RemoveHook(ctx context.Context, id string) error {
	ov := gh.a.ov
	h, err := ov.hook(id)
	if err != nil || h.Gadget != gh.a.id {
		return fail(CodeNotFound, "this gadget has no hook %q", id)
	}
	g, _ := ov.gadget(gh.a.id)
	return ov.removeHooks(ctx, []store.Hook{h}, "gadget:"+g.Name, "removed by the gadget")
}

// unboundHooks refuses the hooks of an instance the kernel runs outside a workspace (a dry
// run's shadow, a JS engine's check).
type unboundHooks struct{}

func (unboundHooks) RegisterHook(context.Context, string, string, string, string) (hooks.Info, error) {
	return hooks.Info{}, errors.New("hooks are not available here (a dry run registers none)")
}
func (unboundHooks) ListHooks(context.Context) ([]hooks.Info, error) { return nil, nil }
func (unboundHooks) RemoveHook(context.Context, string) error {
	return errors.New("hooks are not available here (a dry run removes none)")
}
