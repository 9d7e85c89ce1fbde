package main

import (
	"atelier/host/gatekeeper/mcpgk"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"atelier/capnweb"
	"atelier/host/agent"
	"atelier/host/agent/provider"
	"atelier/host/capability/outboundhttp"
	"atelier/host/cluster"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/metrics"
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/store"
)

func serveCommand() command {
	return command{
		name:    "serve",
		usage:   "[--addr HOST:PORT] [--data FILE] [flags]",
		summary: "serve workspaces and gadgets over Cap'n Web, with all state in one bbolt file",
		details: `Opens (or creates) the data file, then serves the API of docs/api.md over Cap'n Web:
WebSocket at /api and HTTP batch at /api/batch; Prometheus metrics at /metrics (for the admin
user's token as "Authorization: Bearer TOKEN", or for anyone with --metrics-public). On the
first start with a data file it prints a token for the user "admin" (keep it: it is shown
once; admin has no password until changePassword("", new)). Stop it with Ctrl-C; calls in
flight finish first.

It answers only requests for its own names (DNS rebinding protection): its listen address,
with localhost, 127.0.0.1 and [::1] for a loopback or wildcard one, the host of --public-url
and every --allowed-host; any other Host header gets 421 Misdirected Request. Listening on all
interfaces (--addr :8787) answers the loopback names only until --public-url or --allowed-host
names the others (it warns at start). Browser pages may open sessions only from those names.

With --cluster the server is one node of a cluster (docs/cluster.md): it embeds a NATS server
with JetStream, routes to the other nodes, and keeps its state replicated in the cluster (its
files go to DATA.cluster/; every node needs a copy of the same --cluster-secret-file and
--vault-key).

Examples:
  atelier serve --addr 127.0.0.1:8787 --data ./atelier.db
  atelier serve --cluster --node n1 --addr :8787 --cluster-addr 10.0.0.1:6222 \
    --routes 10.0.0.2:6222,10.0.0.3:6222 --cluster-secret-file secret --data ./n1.db`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			var o serveOptions
			fs.StringVar(&o.addr, "addr", "127.0.0.1:8787", "address to listen on")
			fs.Func("public-url", "the URL clients reach the server at (e.g. through a reverse proxy): its host is answered and its origin may open sessions", func(v string) error {
				u, err := url.Parse(v) // checked by gateway.NewHosts
				o.publicURL = u
				return err
			})
			fs.Func("allowed-host", "a further NAME or NAME:PORT clients use in the Host header (repeatable, or comma-separated); NAME alone allows every port", func(v string) error {
				o.allowedHosts = append(o.allowedHosts, commaList(v)...)
				return nil
			})
			fs.StringVar(&o.data, "data", defaultDataFile(), "the bbolt data file")
			fs.StringVar(&o.cacheDir, "cache", "", "compiled-component cache directory (default: the user cache dir)")
			fs.DurationVar(&o.limits.Timeout, "call-timeout", 10*time.Second, "wall-clock limit of one gadget call")
			fs.Int64Var(&o.limits.MaxMemory, "max-memory", 256<<20, "memory budget of one gadget instance (its linear memories and tables together), in bytes")
			fs.DurationVar(&o.gadgetIdle, "gadget-idle", time.Minute, "evict a gadget's instance after this long without calls")
			fs.DurationVar(&o.workspaceIdle, "workspace-idle", 5*time.Minute, "stop an idle workspace's overseer after this long")
			fs.Func("quota", "`NAME=VALUE` sets a quota's starting value (repeatable; e.g. calls_per_second=unlimited, host_memory=4GiB); the admin's changes (atelier admin quota set) override it", o.quotaFlag)
			fs.BoolVar(&o.noSignup, "no-signup", false, "refuse signup(): only the admin (and users created before) can log in")
			fs.BoolVar(&o.metricsPublic, "metrics-public", false, "serve /metrics to anyone (default: only with the admin user's token)")
			fs.IntVar(&o.hashLimit, "hash-limit", 0, "password hashes run at once, 64 MiB each (default: from the CPUs and the available memory); more logins wait up to 2s, then get UNAVAILABLE")
			fs.IntVar(&o.signupBurst, "signup-burst", 10, "signups one address may make at once")
			fs.DurationVar(&o.signupEvery, "signup-every", 6*time.Minute, "then one more signup per address this often")
			fs.Float64Var(&o.hookRate, "hook-rate", 10, "webhook requests per second each hook takes at POST /hooks/ID (more are answered 429)")
			fs.IntVar(&o.hookBurst, "hook-burst", 20, "webhook requests each hook takes at once before --hook-rate applies")
			fs.IntVar(&o.maxSessionsPerAddress, "max-sessions-per-address", gateway.DefaultMaxSessionsPerAddress, "Cap'n Web WebSocket sessions one client address (an IPv6 address by its /64) may hold open at once; more are answered 429")
			fs.IntVar(&o.maxSessions, "max-sessions", gateway.DefaultMaxSessions, "Cap'n Web WebSocket sessions the server holds open at once; more are answered 503")
			fs.IntVar(&o.maxConnsPerAddress, "max-connections-per-address", gateway.DefaultMaxConnectionsPerAddress, "HTTP connections one client address (an IPv6 address by its /64; not a --trusted-proxies address) may hold open at once; more are closed on arrival")
			fs.IntVar(&o.maxConns, "max-connections", 0, "HTTP connections the server holds open at once; more are closed on arrival (default: the file descriptor limit less 1,024)")
			fs.StringVar(&o.trustedProxy.Header, "trusted-proxy-header", "", "behind a reverse proxy: the header holding the client's address (e.g. X-Forwarded-For), trusted from --trusted-proxies only (default: none, the connection's address counts)")
			fs.Func("trusted-proxies", "comma-separated addresses or CIDR prefixes of the reverse proxies whose --trusted-proxy-header counts (default: loopback)", func(v string) error {
				for _, p := range strings.Split(v, ",") {
					prefix, err := parsePrefix(strings.TrimSpace(p))
					if err != nil {
						return err
					}
					o.trustedProxy.Proxies = append(o.trustedProxy.Proxies, prefix)
				}
				return nil
			})
			fs.Uint64Var(&o.retention.Audit, "keep-audit", store.DefaultAuditRetention, "audit lines kept per workspace (older ones are deleted)")
			fs.Uint64Var(&o.retention.Actions, "keep-actions", store.DefaultActionsRetention, "gatekeeper action-log entries kept per workspace, besides pending actions")
			fs.Func("gatekeeper-allow-addr", "comma-separated loopback or private IP:PORT addresses gatekeepers, MCP servers of the built-in MCP gatekeeper and OAuth token exchanges may reach, e.g. a service on your own network (repeatable; default: public addresses only)", func(v string) error {
				return allowAddrs(&o.gatekeeperAllowAddrs, v)
			})
			fs.Func("model-allow-addr", "comma-separated loopback or private IP:PORT addresses the agent may reach model endpoints at, e.g. 127.0.0.1:11434 for Ollama (repeatable; default: public addresses only)", o.modelAllowFlag)
			fs.Func("mcp-stdio", "install an MCP server users may connect as stdio:NAME: NAME=COMMAND, the command line split at spaces, run on this host over stdio (repeatable)", func(v string) error {
				name, argv, err := mcpgk.ParseStdio(v)
				if err != nil {
					return err
				}
				if o.mcpStdio == nil {
					o.mcpStdio = map[string][]string{}
				}
				if _, dup := o.mcpStdio[name]; dup {
					return fmt.Errorf("MCP server %q is given twice", name)
				}
				o.mcpStdio[name] = argv
				return nil
			})
			fs.StringVar(&o.vaultKey, "vault-key", "", "the key file that seals gatekeeper credentials (default: DATA.key; every node of a cluster needs a copy of the same one)")
			fs.BoolVar(&o.cluster.on, "cluster", false, "run as one node of a cluster (the flags below)")
			fs.StringVar(&o.cluster.cfg.Name, "node", "", "cluster: this node's unique, stable name")
			fs.StringVar(&o.cluster.cfg.Listen, "cluster-addr", "", "cluster: HOST:PORT the other nodes route to (empty: a cluster of this node alone)")
			fs.Func("routes", "cluster: comma-separated HOST:PORT of the other nodes' --cluster-addr", func(v string) error {
				o.cluster.cfg.Routes = append(o.cluster.cfg.Routes, commaList(v)...)
				return nil
			})
			fs.StringVar(&o.cluster.secretFile, "cluster-secret-file", "", "cluster: file holding the secret every node shares (created with a random secret if missing)")
			fs.IntVar(&o.cluster.cfg.Replicas, "replicas", 3, "cluster: nodes holding a copy of the state")
			fs.Func("sync", "cluster: when JetStream fsyncs: \"always\" (survives losing every node's power at once, about 2x write latency) or \"interval\" (every 2 minutes; survives losing a minority of nodes)", func(v string) error {
				switch v {
				case "always":
					o.cluster.cfg.SyncAlways = true
				case "interval":
					o.cluster.cfg.SyncAlways = false
				default:
					return errors.New(`want "always" or "interval"`)
				}
				return nil
			})
			fs.DurationVar(&o.cluster.cfg.LeaseTTL, "lease-ttl", 10*time.Second, "cluster: how long a dead node's workspaces wait before another node takes them")
			fs.IntVar(&o.cluster.cfg.SnapshotEvery, "snapshot-every", cluster.DefaultSnapshotEvery, "cluster: log entries between snapshots of the state, after which the log is compacted (negative: never)")
			fs.StringVar(&o.cluster.cfg.ClientListen, "nats-addr", "", "cluster: also serve NATS clients (the nats CLI) on HOST:PORT, user \"atelier\" with the secret as password")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"serve takes no arguments"}
				}
				return serve(ctx, o)
			}
		},
	}
}

type serveOptions struct {
	addr, data, cacheDir      string
	publicURL                 *url.URL
	allowedHosts              []string
	vaultKey                  string
	limits                    runtime.Limits
	gadgetIdle, workspaceIdle time.Duration
	noSignup, metricsPublic   bool
	hashLimit, signupBurst    int
	hookRate                  float64
	hookBurst                 int
	signupEvery               time.Duration
	trustedProxy              gateway.TrustedProxy
	maxSessionsPerAddress     int
	maxSessions               int
	maxConnsPerAddress        int
	maxConns                  int
	retention                 store.Retention
	quotas                    quota.Limits
	modelAllowAddrs           []string
	gatekeeperAllowAddrs      []string
	mcpStdio                  map[string][]string
	cluster                   clusterOptions
}

// quotaFlag sets one quota of a --quota NAME=VALUE flag.
func (o *serveOptions) quotaFlag(s string) error {
	name, value, ok := strings.Cut(s, "=")
	q, known := quota.Lookup(strings.TrimSpace(name))
	if !ok || !known {
		return fmt.Errorf("want NAME=VALUE with NAME one of %s", strings.Join(quota.Names(), ", "))
	}
	v, err := q.Parse(value)
	if err != nil {
		return err
	}
	q.Set(&o.quotas, v)
	return nil
}

// modelAllowFlag adds the addresses of a --model-allow-addr flag, each an IP:PORT.
func (o *serveOptions) modelAllowFlag(v string) error { return allowAddrs(&o.modelAllowAddrs, v) }

// allowAddrs adds the comma-separated IP:PORT addresses of v to list.
func allowAddrs(list *[]string, v string) error {
	for _, a := range commaList(v) {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || ap.Port() == 0 {
			return fmt.Errorf("%q is not an IP:PORT address such as 127.0.0.1:11434 or [::1]:8080", a)
		}
		*list = append(*list, ap.String())
	}
	return nil
}

type clusterOptions struct {
	on         bool
	cfg        cluster.Config
	secretFile string
}

// parsePrefix parses an address (a prefix of itself) or a CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
	}
	return p.Masked(), nil
}

// defaultDataFile is atelier.db in the user's data directory ($XDG_DATA_HOME/atelier or
// ~/.local/share/atelier).
func defaultDataFile() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "atelier.db"
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "atelier", "atelier.db")
}

func serve(ctx context.Context, o serveOptions) error {
	std := stdio(ctx)
	logger := slog.New(slog.NewTextHandler(std.err, nil))
	db, member, err := openStore(ctx, o, logger)
	if err != nil {
		return err
	}
	if member != nil {
		defer member.Close()
	}
	defer db.Close()
	rt, err := runtime.New(runtime.Config{CacheDir: o.cacheDir, Interfaces: kernel.HostInterfaces(nil), Logger: logger})
	if err != nil {
		return fmt.Errorf("start runtime: %w", err)
	}
	defer rt.Close()
	gkEgress := outboundhttp.Options{AllowAddrs: o.gatekeeperAllowAddrs}
	gkRuntime, extismEngine, err := gatekeeperEngines(o.cacheDir, gkEgress, logger)
	if err != nil {
		return err
	}
	defer gkRuntime.Close()
	defer extismEngine.Close()
	agentHTTP, err := provider.NewHTTPClient(provider.EgressOptions{AllowAddrs: o.modelAllowAddrs})
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry() // what /metrics serves: the kernel's, the gateway's, go_* and process_*
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Metrics: reg, Limits: o.limits, Logger: logger, Version: versionString(),
		SignupsDisabled: o.noSignup, HashLimit: o.hashLimit, SignupBurst: o.signupBurst, SignupEvery: o.signupEvery, GadgetIdle: o.gadgetIdle, WorkspaceIdle: o.workspaceIdle, Quotas: o.quotas,
		GatekeeperRuntime: gkRuntime, Extism: extismEngine, KeyFile: cmp.Or(o.vaultKey, o.data+".key"), Cluster: clusterOf(member),
		ModelAllowAddrs: o.modelAllowAddrs, MCP: mcpgk.Config{AllowAddrs: o.gatekeeperAllowAddrs, Stdio: o.mcpStdio}, Agent: agent.New(agent.Config{HTTP: agentHTTP}),
		PublicURL: publicURLString(o.publicURL), OAuthEgress: gkEgress, HookRate: o.hookRate, HookBurst: o.hookBurst})
	defer k.Close()
	if member != nil {
		member.Store().OnRevoke(k.NoteRevocation)
		member.Store().OnQuotas(k.NoteQuotas)
		if err := member.Serve(k.PeerMain, capnweb.Options{}); err != nil {
			return err
		}
	}
	adminToken, err := k.Bootstrap(ctx)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (pass another --addr)", o.addr, err)
	}
	hosts, err := gateway.NewHosts(gateway.HostsConfig{Listen: ln.Addr().String(), PublicURL: o.publicURL, Allowed: o.allowedHosts})
	if err != nil {
		ln.Close()
		return fmt.Errorf("%w (fix --allowed-host or --public-url)", err)
	}
	if hosts.Unconfigured() {
		logger.Warn("listening on every interface but answering only localhost, 127.0.0.1 and [::1]: pass --public-url or --allowed-host with the names clients use", "addr", ln.Addr())
	}
	k.SetHookBase("http://" + ln.Addr().String()) // hooks' URLs without --public-url
	gw := gateway.New(gateway.Config{Kernel: k, Metrics: reg, Logger: logger, MetricsPublic: o.metricsPublic, Hosts: hosts, TrustedProxy: o.trustedProxy,
		MaxSessionsPerAddress: o.maxSessionsPerAddress, MaxSessions: o.maxSessions})
	// An idle keep-alive connection is closed after IdleTimeout (without it, never: a stranger
	// could hold any number of them); WebSocket sessions have their own keepalive.
	// So is the number of open connections, per address and in all (file descriptors).
	conns := gateway.NewConnLimits(gateway.ConnLimitsConfig{PerAddress: o.maxConnsPerAddress, Total: o.maxConns, TrustedProxy: o.trustedProxy, Metrics: reg})
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnState: conns.ConnState}
	fmt.Fprintf(std.out, "%s\nserving http://%s (Cap'n Web: ws://%s/api, batch: http://%s/api/batch)\ndata: %s\n",
		versionString(), ln.Addr(), ln.Addr(), ln.Addr(), o.data)
	if member != nil {
		member.SetAddress(ln.Addr().String())
		fmt.Fprintf(std.out, "cluster node %s: %s\n", o.cluster.cfg.Name, clusterDir(o.data))
	}
	if adminToken != "" {
		fmt.Fprintf(std.out, "first run: admin token (shown once, keep it secret):\n  %s\n", adminToken)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var replicaFailed <-chan struct{} // nil, never ready, on a single node
	if member != nil {
		replicaFailed = member.Store().Failed()
	}
	select {
	case err := <-errc:
		return err
	case <-replicaFailed:
		return fmt.Errorf("cluster node %s: %w", o.cluster.cfg.Name, member.Store().Err())
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if member != nil { // hand the workspaces over before the node goes away
		if err := k.Drain(shutdown); err != nil {
			logger.Warn("drain before stopping", "err", err)
		}
	}
	// The listener closes and HTTP requests finish (srv.Shutdown) while the WebSocket
	// sessions, which srv.Shutdown does not wait for, drain: their calls in progress finish
	// and reply, new calls are refused. The kernel closes after both (deferred).
	drained := make(chan error, 1)
	go func() { drained <- gw.Shutdown(shutdown) }()
	err = srv.Shutdown(shutdown)
	if derr := <-drained; derr != nil {
		logger.Warn("WebSocket sessions cut off before their calls finished", "err", derr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// gatekeeperEngines starts what runs gatekeepers: a runtime of their own (so that their
// capabilities, outbound HTTP and approvals, are never offered to gadgets) and the Extism engine
// for packages of that format. Both use the egress rules of egress: no private or loopback
// addresses but its AllowAddrs, no redirects, bounded bodies.
func gatekeeperEngines(cacheDir string, egress outboundhttp.Options, logger *slog.Logger) (*runtime.Runtime, *extism.Engine, error) {
	rt, err := gatekeeperRuntime(cacheDir, egress, logger)
	if err != nil {
		return nil, nil, err
	}
	eng, err := extism.New(extism.Options{Egress: egress})
	if err != nil {
		rt.Close()
		return nil, nil, fmt.Errorf("start extism engine: %w", err)
	}
	return rt, eng, nil
}

// gatekeeperRuntime starts the runtime of gatekeeper components, with the egress rules of
// egress.
func gatekeeperRuntime(cacheDir string, egress outboundhttp.Options, logger *slog.Logger) (*runtime.Runtime, error) {
	ifaces, err := gatekeeper.Interfaces(egress)
	if err != nil {
		return nil, fmt.Errorf("start gatekeeper runtime: %w", err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Logger: logger, Interfaces: ifaces})
	if err != nil {
		return nil, fmt.Errorf("start gatekeeper runtime: %w", err)
	}
	return rt, nil
}

// openStore opens the data file, or in cluster mode joins the cluster and returns its
// replicated store.
func openStore(ctx context.Context, o serveOptions, logger *slog.Logger) (store.Store, *cluster.Member, error) {
	if !o.cluster.on {
		db, err := store.Open(o.data)
		if err != nil {
			return nil, nil, err
		}
		db.SetRetention(o.retention)
		return db, nil, nil
	}
	cfg := o.cluster.cfg
	cfg.Logger = logger
	dir := clusterDir(o.data)
	cfg.Dir = filepath.Join(dir, "jetstream")
	if o.cluster.secretFile != "" {
		secret, err := readOrCreateSecret(o.cluster.secretFile)
		if err != nil {
			return nil, nil, err
		}
		cfg.Secret = secret
	}
	fmt.Fprintf(stdio(ctx).out, "joining the cluster as %s (waiting for the other nodes)...\n", cfg.Name)
	m, err := cluster.Join(ctx, cfg, filepath.Join(dir, "replica.db"))
	if err != nil {
		return nil, nil, err
	}
	m.Store().SetRetention(o.retention)
	return m.Store(), m, nil
}

// clusterDir holds a cluster node's files next to the data file.
func clusterDir(data string) string { return data + ".cluster" }

// clusterOf is the kernel's view of m (nil on a single node).
func clusterOf(m *cluster.Member) kernel.Cluster {
	if m == nil {
		return nil
	}
	return m
}

// readOrCreateSecret reads the cluster secret from path, creating the file (mode 0600) with a
// random secret if it does not exist; copy it to every node.
func readOrCreateSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return "", fmt.Errorf("create the cluster secret: %w", err)
		}
		secret := hex.EncodeToString(raw)
		if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("create the cluster secret: %w", err)
		}
		return secret, nil
	}
	if err != nil {
		return "", fmt.Errorf("read the cluster secret: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < 16 {
		return "", fmt.Errorf("the cluster secret in %s is shorter than 16 characters", path)
	}
	return secret, nil
}

// publicURLString is u without a trailing slash ("" for nil): the kernel's PublicURL, the
// base of the OAuth redirect_uri.
func publicURLString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return strings.TrimSuffix(u.String(), "/")
}
