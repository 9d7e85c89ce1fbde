// Package kernel is Atelier's core. It keeps users, agents and workspaces in the store, runs
// each open workspace under one overseer (a single-writer actor that owns the workspace's
// gadgets, bindings, sharing and audit log) and each gadget as an actor (one live instance,
// calls one at a time in arrival order, a trapped instance replaced on the next call with its
// state intact), and serves all of it over Cap'n Web (see NewPublic and docs/api.md).
//
// Every gadget call is one transaction: the kv writes it makes are buffered (reads see them)
// and submitted as one commit to the actor's CommitChain when the call returns, or discarded
// if the call traps. Output gate (as in Durable Objects): the next call may run while that
// commit is being written, reading the earlier call's writes from an overlay, but a call's
// reply and events are released only once its commit (or, when it wrote nothing, the latest
// commit before it) is durable; when a commit fails, the replies held behind it fail and the
// actor restarts from the store. So concurrent calls share fsyncs (group commit) and a gadget
// is not limited to one call per disk flush. Each gadget's stored bytes are bounded by
// Config.GadgetQuota.
//
// A gadget is a component or a JS gadget (source files run by jsruntime, see jsgadget.go);
// both run on the same actors. Code Mode (codemode.go) runs a principal's snippet with its
// gadgets as bindings, for Cap'n Web (Workspace.ExecuteCode), and for in-process front ends
// such as host/mcp (AgentSession).
//
// Gatekeepers (gatekeepers.go, gkaccounts.go, gkbindings.go, gkqueue.go): the admin installs
// packages server-wide, users connect accounts whose credentials are sealed with the vault
// key, a workspace binds a gadget to an account, and the workspace's queue records the
// gatekeeper's observations and holds its actions until the account's owner decides.
//
// Idle gadget instances are evicted and idle overseers stop; compiled components are shared
// by code hash and closed with their last actor, so an idle gadget costs no memory beyond its
// record in the store.
package kernel

import (
	"atelier/host/gatekeeper/mcpgk"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/capability/clock"
	"atelier/host/capability/events"
	"atelier/host/capability/hooks"
	"atelier/host/capability/kv"
	hostlog "atelier/host/capability/log"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/metrics"
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/jsruntime"
)

// Config configures a Kernel. Zero durations take the defaults named.
type Config struct {
	// Runtime runs the components; it must provide HostInterfaces().
	Runtime *runtime.Runtime
	// Store holds everything durable.
	Store store.Store
	// Limits bound every gadget call and instance; zero fields take the runtime's defaults,
	// except MaxResult, which bounds the encoded size of a gadget's result, a snippet's value
	// and a gatekeeper's response: by default Cap'n Web's message limit
	// (capnweb.DefaultLimits().MaxMessageSize), as a larger one could not be sent.
	Limits runtime.Limits
	// Logger receives kernel events; nil uses slog.Default().
	Logger *slog.Logger
	// Version is reported by serverInfo().
	Version string
	// Password are the argon2id parameters of new password hashes (zero: auth.DefaultParams).
	Password auth.Params
	// HashLimit is the most password hashes (login, signup, changePassword) that run at once
	// (0: auth.HashLimit(Password), from the CPUs and the available memory); each takes
	// Password.MemoryKiB while it runs.
	HashLimit int
	// HashWait is the longest a password check waits for a free hash slot (2 s); then, or
	// when 4×HashLimit checks wait already, it fails with UNAVAILABLE.
	HashWait time.Duration
	// HashHook, if set, is called in each password hash's slot just before the hash runs
	// (tests count and hold hashes with it).
	HashHook func()
	// SignupBurst is how many signups one remote address may make at once (10).
	SignupBurst int
	// SignupEvery is how often an address that used its burst may sign up again (6 minutes).
	SignupEvery time.Duration
	// SessionTTL is how long a login or signup token lives (30 days).
	SessionTTL time.Duration
	// SignupsDisabled refuses signup(): only the bootstrap admin exists, which suits a
	// single-person server.
	SignupsDisabled bool
	// GadgetIdle evicts a gadget's instance after this long without calls (1 minute).
	GadgetIdle time.Duration
	// GadgetTrim trims a gadget's instance after this long without calls (15 seconds): the
	// pages of its memories that a fresh instance would read the same (zeros, and the pages
	// of its code's memory image it only read) go back to the kernel, so that an idle
	// instance's resident memory is what it wrote (runtime.Instance.Trim). Its next call
	// faults such pages in again. Trimming happens once per idle period, before GadgetIdle.
	GadgetTrim time.Duration
	// WorkspaceIdle stops a workspace's overseer after this long without use once none of its
	// gadgets has an instance (5 minutes).
	WorkspaceIdle time.Duration
	// MaxCode is the largest component accepted (32 MiB).
	MaxCode int
	// GadgetQuota bounds each gadget's stored bytes (keys plus values, 64 MiB); a write past
	// it fails with kv's quota-exceeded.
	GadgetQuota int64
	// Now is the clock of the login rate limits and of token expiry (time.Now).
	Now func() time.Time
	// GatekeeperRuntime runs gatekeeper components: it must provide gatekeeper.Interfaces,
	// kv and log. Nil refuses packages of the component format.
	GatekeeperRuntime *runtime.Runtime
	// Extism runs gatekeeper packages of the extism format; nil refuses them.
	Extism *extism.Engine
	// ScheduleMinEvery is the shortest period a schedule may have (1 second).
	ScheduleMinEvery time.Duration
	// ScheduleTick is how often the scheduler looks for due schedules and hook polls, and
	// for notify hooks to watch (250 ms).
	ScheduleTick time.Duration
	// HookRate and HookBurst limit each hook's inbound webhook requests, as a token bucket
	// (10 per second, bursts of 20): past them a request is answered 429.
	HookRate  float64
	HookBurst int
	// HookInflight bounds the inbound webhook requests handled at once, server-wide (64): past
	// it a request is answered 503.
	HookInflight int
	// Cluster, if set, runs the kernel as one node of a cluster (host/cluster): a workspace
	// runs on the node holding its lease, and calls reach it through routed workspace objects.
	Cluster Cluster
	// KeyFile is the vault key that seals gatekeeper credentials and models' API keys,
	// created (mode 0600) on first use. Keep it outside the data file (atelier serve:
	// DATA.key); empty refuses connectAccount and addModel with a key.
	KeyFile string
	// PublicURL is the URL users reach this server at (atelier serve --public-url); an OAuth
	// flow's redirect_uri is PublicURL + "/oauth/callback". Empty: the origin of the session
	// that starts the flow (its Origin header, or http:// and its Host header).
	PublicURL string
	// OAuthEgress configures the host's own requests to OAuth token endpoints (AllowAddrs:
	// the loopback or private addresses allowed; the body and time limits are the host's own).
	OAuthEgress outboundhttp.Options
	// OAuthRefreshMargin: an OAuth access token that expires within it is refreshed before
	// use (60 s).
	OAuthRefreshMargin time.Duration
	// ModelAllowAddrs are the loopback or private "ip:port" addresses the agent may reach
	// model endpoints at (an Ollama on 127.0.0.1:11434); the agent's egress refuses every
	// other non-public address. addModel accepts any URL; this decides what requests reach,
	// and listModels says of a model whose base URL is a refused address (ModelInfo.Refused).
	ModelAllowAddrs []string
	// MCP configures the built-in MCP gatekeeper (host/gatekeeper/mcpgk): the loopback or
	// private addresses its HTTP servers may be at and the stdio servers the admin installed.
	MCP mcpgk.Config
	// Quotas bound what users, workspaces and the host consume (host/quota); zero fields take
	// quota.Defaults. The admin's changes, kept in the data file, override them.
	Quotas quota.Limits
	// Agent answers in the chats that have a model (host/agent); nil leaves them unanswered,
	// each with a notice saying so.
	Agent AgentRunner
	// Metrics is the server's registry: the kernel registers its metrics on it (uptime,
	// gadget calls, latency and instances, subscriptions, host quotas, and the Cluster's
	// gauges), and the gateway serves it at /metrics. Nil makes a new one
	// (metrics.NewRegistry); Kernel.Metrics returns it.
	Metrics *prometheus.Registry
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OAuthRefreshMargin <= 0 {
		c.OAuthRefreshMargin = time.Minute
	}
	if c.Metrics == nil {
		c.Metrics = metrics.NewRegistry()
	}
	if c.Password == (auth.Params{}) {
		c.Password = auth.DefaultParams
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 30 * 24 * time.Hour
	}
	if c.GadgetIdle <= 0 {
		c.GadgetIdle = time.Minute
	}
	if c.WorkspaceIdle <= 0 {
		c.WorkspaceIdle = 5 * time.Minute
	}
	if c.GadgetTrim <= 0 {
		c.GadgetTrim = 15 * time.Second
	}
	if c.MaxCode <= 0 {
		c.MaxCode = 32 << 20
	}
	if c.GadgetQuota <= 0 {
		c.GadgetQuota = 64 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ScheduleMinEvery <= 0 {
		c.ScheduleMinEvery = time.Second
	}
	if c.ScheduleTick <= 0 {
		c.ScheduleTick = 250 * time.Millisecond
	}
	if c.HookRate <= 0 {
		c.HookRate = 10
	}
	if c.HookBurst <= 0 {
		c.HookBurst = 20
	}
	if c.HookInflight <= 0 {
		c.HookInflight = 64
	}
	if c.Limits.MaxResult <= 0 {
		c.Limits.MaxResult = int64(capnweb.DefaultLimits().MaxMessageSize)
	}
	return c
}

// Kernel is the core of one server. It is safe for concurrent use.
type Kernel struct {
	cfg      Config
	log      *slog.Logger
	st       store.Store
	hub      *hub
	code     *codeCache
	checked  checkedSet // code and grants that passed checkCode
	surfaces surfaces   // the RPC surfaces of code versions
	guards   guards
	hasher   *auth.Hasher // runs every password hash
	gks      gatekeepers
	vault    vaultKey
	sched    scheduler
	hooks    hookState    // hooks.go
	metrics  *callMetrics // gadget call metrics (metrics.go)
	gov      governor     // the memory live instances hold (budget.go)
	// quotas holds the quotas in force (quotas.go): Config.Quotas with the admin's changes;
	// quotaMu orders their loads and changes. users keeps the per-user state of the user
	// quotas.
	quotas  atomic.Pointer[quota.Limits]
	quotaMu sync.Mutex
	users   users
	// subHolders shares the lease lookups of routed subscriptions (cluster mode).
	subHolders holderCache
	// chats keeps the chats' agent runs and orders each chat's writes (chatstate.go); models
	// resolves their models (chatmodels.go: the kernel itself, or a test's fixed set).
	chats  chatState
	models chatModels
	// dryRuns are the dry runs of executeCode held for commitDryRun (dryhold.go).
	dryRuns dryRuns
	// oauth holds the pending OAuth authorizations and token refreshes (gkoauth.go).
	oauth oauthFlows

	// js runs JS gadgets and executeCode snippets; compiled on first use (jsEngine).
	jsOnce sync.Once
	js     *jsruntime.Engine
	jsErr  error

	// revocations counts token revocations: a session re-checks its token in the store when
	// the count moved since it last did.
	revocations atomic.Uint64

	mu        sync.RWMutex // guards overseers and closed
	overseers map[store.WorkspaceID]*overseer
	closed    bool
}

// New returns a kernel over cfg's runtime and store.
func New(cfg Config) *Kernel {
	cfg = cfg.withDefaults()
	k := &Kernel{cfg: cfg, log: cfg.Logger, st: cfg.Store, hub: newHub(cfg.Logger), guards: newGuards(cfg), overseers: map[store.WorkspaceID]*overseer{}, gks: gatekeepers{gks: map[string]*gatekeeper.Gatekeeper{}}, metrics: newCallMetrics()}
	k.gks.builtins = k.builtinGatekeepers()
	k.hasher = auth.NewHasher(auth.HasherConfig{Params: cfg.Password, Limit: cfg.HashLimit, Wait: cfg.HashWait, Hook: cfg.HashHook})
	k.code = newCodeCache(k)
	k.models = k // chats' models are the ones models.go stores
	cfg.Metrics.MustRegister(kernelCollector{k})
	if cfg.Cluster != nil {
		cfg.Metrics.MustRegister(cfg.Cluster)
	}
	k.hooks = newHookState(cfg)
	k.startScheduler()
	return k
}

// Metrics returns the registry the kernel's metrics are registered on (Config.Metrics).
func (k *Kernel) Metrics() *prometheus.Registry { return k.cfg.Metrics }

// HostInterfaces returns the atelier:host capabilities the kernel's runtime must provide. The
// kernel binds kv, events, bindings and hooks to each gadget instance; def receives the events of
// instances run outside the kernel (nil refuses them).
func HostInterfaces(def events.Publisher) []runtime.HostInterface {
	if def == nil {
		def = unboundEvents{}
	}
	return []runtime.HostInterface{
		hostlog.New(), clock.New(time.Now), kv.New(kv.Limits{MaxValue: store.MaxValue}),
		events.New(def, events.Limits{}), bindingsInterface(), hooks.New(),
	}
}

// unboundEvents refuses events of an instance the kernel did not bind.
type unboundEvents struct{}

func (unboundEvents) Publish(context.Context, events.Event) error {
	return errors.New("events are not bound to this instance")
}

// ErrClosed is returned by a kernel after Close.
var ErrClosed = fail(CodeFailedPrecondition, "the server is shutting down")

// AdminName is the user the first-run token belongs to.
const AdminName = "admin"

// Bootstrap issues the first-run admin token, once per data file: it creates the user "admin"
// (without a password; set one with changePassword("", new)) and returns a non-expiring token
// for it. It returns "" when the data file was bootstrapped before.
func (k *Kernel) Bootstrap(ctx context.Context) (string, error) {
	tok, hash, err := auth.NewToken()
	if err != nil {
		return "", err
	}
	issued, err := k.st.Bootstrap(ctx, AdminName, store.Token{Hash: hash, Created: time.Now().UTC()})
	if err != nil || !issued {
		return "", err
	}
	return tok, nil
}

// Close stops the scheduler (its runs in flight are cancelled), every overseer (calls in
// flight finish first) and every subscription.
func (k *Kernel) Close() error {
	k.stopScheduler()
	k.stopHooks()
	k.chats.close(k.log)
	k.mu.Lock()
	k.closed = true
	ovs := k.overseers
	k.overseers = map[store.WorkspaceID]*overseer{}
	k.mu.Unlock()
	for _, ov := range ovs {
		ov.stop()
	}
	k.hub.close()
	k.closeGatekeepers()
	k.jsOnce.Do(func() {}) // no engine starts after Close
	if k.js != nil {
		k.js.Close()
	}
	return nil
}

// overseer returns the running overseer of workspace id, starting one (under a new lease) if
// none runs.
func (k *Kernel) overseer(ctx context.Context, id store.WorkspaceID) (*overseer, error) {
	k.mu.RLock()
	ov, closed := k.overseers[id], k.closed
	k.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if ov != nil {
		return ov, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	if ov := k.overseers[id]; ov != nil {
		return ov, nil
	}
	ov, err := startOverseer(ctx, k, id)
	if err != nil {
		return nil, err
	}
	k.overseers[id] = ov
	return ov, nil
}

// running returns the overseers running now.
func (k *Kernel) running() []*overseer {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Collect(maps.Values(k.overseers))
}

// forget removes ov from the registry if it is still the registered one.
func (k *Kernel) forget(ov *overseer) {
	k.mu.Lock()
	if k.overseers[ov.id] == ov {
		delete(k.overseers, ov.id)
	}
	k.mu.Unlock()
}

// withOverseer runs fn on the workspace's overseer, retrying on a fresh one when the one it
// got stopped in between (idle stop or lease loss).
func (k *Kernel) withOverseer(ctx context.Context, id store.WorkspaceID, fn func(*overseer) error) error {
	return k.withCachedOverseer(ctx, id, nil, fn)
}

// withCachedOverseer is withOverseer for a caller that keeps the overseer it last used in
// cache (nil: none), so that its calls find it without the kernel's registry. A stopped
// overseer fails fn with errStopped, which drops it from cache.
func (k *Kernel) withCachedOverseer(ctx context.Context, id store.WorkspaceID, cache *atomic.Pointer[overseer], fn func(*overseer) error) error {
	for range 3 {
		var ov *overseer
		if cache != nil {
			ov = cache.Load()
		}
		if ov == nil {
			var err error
			if ov, err = k.overseer(ctx, id); err != nil {
				return err
			}
			if cache != nil {
				cache.Store(ov)
			}
		}
		err := fn(ov)
		if !errors.Is(err, errStopped) {
			return err
		}
		if cache != nil {
			cache.CompareAndSwap(ov, nil)
		}
	}
	return fail(CodeInternal, "workspace %s keeps stopping; try again", id)
}

// revokeToken deletes a token; the sessions that use it fail from their next call.
func (k *Kernel) revokeToken(ctx context.Context, hash string) error {
	if err := k.st.DeleteToken(ctx, hash); err != nil {
		return wrapErr(err, "revoke token")
	}
	k.revocations.Add(1)
	return nil
}

// Version is the server's version (Config.Version).
func (k *Kernel) Version() string { return k.cfg.Version }

// Stats counts what the kernel holds in memory.
type Stats struct {
	// Workspaces is the number of running overseers.
	Workspaces int
	// Actors is the number of gadgets with a live (or loading) actor.
	Actors int
	// Trimmed is the number of those actors whose instance was trimmed (Config.GadgetTrim)
	// and has not been called since.
	Trimmed int
	// Subscriptions is the number of live subscriptions.
	Subscriptions int
	// Components is the number of programs held (compiled components and JS bundles, shared by
	// code hash).
	Components int
}

// Stats returns the current counts.
func (k *Kernel) Stats() Stats {
	ovs := k.running()
	st := Stats{Workspaces: len(ovs), Subscriptions: k.hub.count(), Components: k.code.count()}
	for _, ov := range ovs {
		ov.mu.RLock()
		st.Actors += len(ov.actors)
		for _, a := range ov.actors {
			if a.trimmed.Load() == a.lastUsed.Load() {
				st.Trimmed++
			}
		}
		ov.mu.RUnlock()
	}
	return st
}
