// Package cluster runs Atelier over several nodes (notes/scale-out.md, design A): every node
// embeds a NATS server with JetStream, joined to the others by routes. Durable state is a
// replicated log (the ATL_LOG stream) that every node applies in order to its own bbolt
// replica, so reads are local; a workspace runs on the one node holding its lease (ATL_LEASE,
// a KV bucket with a TTL), and its commits carry the workspace's epoch, which the NATS server
// checks before it appends them (a stale owner is fenced by the server, not by clocks). Calls
// for a workspace owned elsewhere travel to the owner as Cap'n Web messages over NATS.
//
// The package knows NATS and the store's data model; the kernel sees it only through
// store.Store and the small routing interface it declares.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// Config configures one node.
type Config struct {
	// Name identifies the node in the cluster; it must be unique and stable across restarts.
	Name string
	// Dir holds the node's JetStream files.
	Dir string
	// Listen is the host:port other nodes route to; empty runs a single node without routes
	// (JetStream R1, for one machine).
	Listen string
	// Routes are the host:port of the other nodes' Listen addresses.
	Routes []string
	// Secret authenticates nodes to each other (every node needs the same one); required with
	// Listen.
	Secret string
	// ClientListen serves NATS clients (the nats CLI) on host:port, with the secret as the
	// password of user "atelier". Empty: a random loopback port in a cluster (the NATS server
	// starts its routes only after a client listener), none on a single node.
	ClientListen string
	// Replicas is how many nodes hold every stream (3; always 1 without Listen).
	Replicas int
	// SyncAlways fsyncs every JetStream write before it is acknowledged. Without it the file
	// store fsyncs every 2 minutes and an acknowledged write survives the loss of any
	// Replicas-1 nodes but not the power loss of a majority at once (the recovery point of
	// such a correlated failure is the last sync).
	SyncAlways bool
	// LeaseTTL is how long a workspace's lease outlives its owner's last renewal (10 s); it
	// bounds the stall when an owner dies.
	LeaseTTL time.Duration
	// SnapshotEvery is how many log entries the cluster writes between snapshots of the
	// replicas, after which the log is compacted (Store.Compact); 0 takes the default
	// (DefaultSnapshotEvery), a negative number never snapshots on its own.
	SnapshotEvery int
	// Logger receives the node's events; nil uses slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Replicas = 1 // a node without routes holds the only copy
	} else if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// DefaultSnapshotEvery is Config.SnapshotEvery's default: a snapshot, and a compaction of the
// log, every 100,000 entries.
const DefaultSnapshotEvery = 100_000

// routeUser is the user name of route and client authentication; the password is the secret.
const routeUser = "atelier"

// routeTLSTimeout bounds the TLS handshake of a route.
const routeTLSTimeout = 5 * time.Second

// Node is one running cluster member: its NATS server and the connection the node uses.
type Node struct {
	cfg Config
	log *slog.Logger
	srv *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

// Start starts the node's NATS server, connects to it in-process and waits until JetStream
// answers (with routes: until enough nodes have joined to hold Replicas copies).
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if cfg.Name == "" {
		return nil, errors.New("start cluster node: a node name is required (--node)")
	}
	if err := checkName(cfg.Name); err != nil {
		return nil, fmt.Errorf("start cluster node: name %w", err)
	}
	opts, err := serverOptions(cfg)
	if err != nil {
		return nil, fmt.Errorf("start cluster node %s: %w", cfg.Name, err)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start cluster node %s: %w", cfg.Name, err)
	}
	log := cfg.Logger.With("node", cfg.Name)
	fatal := fatalLog{log: log, first: make(chan string, 1)}
	srv.SetLogger(fatal, false, false)
	srv.Start()
	// Recovering a large JetStream store, or a loaded machine, can take a while: wait as long
	// as ctx lets, saying so. A port the server cannot listen on ends the wait at once.
	for waited := time.Duration(0); !srv.ReadyForConnections(time.Second); waited += time.Second {
		select {
		case msg := <-fatal.first:
			srv.Shutdown()
			switch {
			case strings.Contains(msg, "listening on router port"):
				msg += " (is another program using that address? choose another --cluster-addr, or stop it)"
			case strings.Contains(msg, "listening on port"):
				msg += " (is another program using that address? choose another --nats-addr, or stop it)"
			}
			return nil, fmt.Errorf("start cluster node %s: %s", cfg.Name, msg)
		default:
		}
		if err := ctx.Err(); err != nil {
			srv.Shutdown()
			return nil, fmt.Errorf("start cluster node %s: the NATS server was not ready after %s: %w", cfg.Name, waited, err)
		}
		if waited > 0 && waited%(5*time.Second) == 0 {
			log.Info("waiting for the NATS server to start (it may be recovering its JetStream files)", "waited", waited)
		}
	}
	// In process, the only wait is for the server's greeting, which a loaded machine can
	// stretch past the client's 2 s default.
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name("atelier-"+cfg.Name), nats.MaxReconnects(-1),
		nats.UserInfo(routeUser, cfg.Secret), nats.Timeout(inProcessTimeout))
	if err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("start cluster node %s: connect in-process: %w", cfg.Name, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		return nil, fmt.Errorf("start cluster node %s: %w", cfg.Name, err)
	}
	n := &Node{cfg: cfg, log: log, srv: srv, nc: nc, js: js}
	if err := n.waitJetStream(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// fatalLog is the embedded NATS server's logger. It drops the server's routine messages (the
// node logs what matters itself) and logs its fatal errors, the first of which (a port it
// cannot listen on) Start returns instead of waiting for a server that will never be ready.
type fatalLog struct {
	log   *slog.Logger
	first chan string
}

// Fatalf logs a fatal server error and keeps the first one for Start.
func (f fatalLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	f.log.Error("the NATS server stopped a part of itself", "err", msg)
	select {
	case f.first <- msg:
	default:
	}
}

// Noticef drops a notice.
func (fatalLog) Noticef(string, ...any) {}

// Warnf drops a warning.
func (fatalLog) Warnf(string, ...any) {}

// Errorf drops an error the server recovers from (a route not up yet, a client gone).
func (fatalLog) Errorf(string, ...any) {}

// Debugf drops a debug message.
func (fatalLog) Debugf(string, ...any) {}

// Tracef drops a trace message.
func (fatalLog) Tracef(string, ...any) {}

func serverOptions(cfg Config) (*server.Options, error) {
	o := &server.Options{
		ServerName: cfg.Name, JetStream: true, StoreDir: cfg.Dir, NoSigs: true, NoLog: true,
		SyncAlways: cfg.SyncAlways, DontListen: cfg.ClientListen == "" && cfg.Listen == "",
		// Code blobs travel in the object store in chunks; log entries stay well below this.
		MaxPayload: 8 << 20,
	}
	if !o.DontListen {
		if cfg.Secret == "" {
			return nil, errors.New("a cluster (or a NATS client address) needs a shared secret (--cluster-secret-file) so that only its nodes can join")
		}
		o.Host, o.Port, o.Username, o.Password = "127.0.0.1", server.RANDOM_PORT, routeUser, cfg.Secret
		if cfg.ClientListen != "" {
			host, port, err := splitHostPort(cfg.ClientListen)
			if err != nil {
				return nil, fmt.Errorf("client address: %w", err)
			}
			o.Host, o.Port = host, port
		}
	}
	if cfg.Listen == "" {
		if len(cfg.Routes) > 0 {
			return nil, errors.New("routes given without a cluster address to listen on")
		}
		return o, nil
	}
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster address: %w", err)
	}
	tlsConf, err := routeTLS(cfg.Secret, cfg.Name)
	if err != nil {
		return nil, err
	}
	o.Cluster = server.ClusterOpts{Name: "atelier", Host: host, Port: port, Username: routeUser, Password: cfg.Secret,
		TLSConfig: tlsConf, TLSTimeout: routeTLSTimeout.Seconds()}
	for _, r := range cfg.Routes {
		if _, _, err := splitHostPort(r); err != nil {
			return nil, fmt.Errorf("route %q: %w", r, err)
		}
		o.Routes = append(o.Routes, &url.URL{Scheme: "nats", Host: r, User: url.UserPassword(routeUser, cfg.Secret)})
	}
	return o, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

// inProcessTimeout bounds the in-process connection's handshake with the node's own server.
const inProcessTimeout = 30 * time.Second

// waitJetStream waits until JetStream answers account requests (a clustered JetStream needs
// its meta group to have elected a leader first).
func (n *Node) waitJetStream(ctx context.Context) error {
	last := time.Time{}
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := n.js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("start cluster node %s: JetStream not ready: %w (are the other nodes running and routed?)", n.cfg.Name, err)
		}
		if time.Since(last) > 5*time.Second {
			n.log.Info("waiting for the cluster to form", "peers", n.Peers(), "err", err)
			last = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Name is the node's name.
func (n *Node) Name() store.NodeID { return store.NodeID(n.cfg.Name) }

// Config returns the node's configuration, defaults applied.
func (n *Node) Config() Config { return n.cfg }

// Conn is the node's in-process NATS connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// JetStream is the node's JetStream client.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// Peers lists the names of the nodes this node has routes to, sorted.
func (n *Node) Peers() []string {
	rz, err := n.srv.Routez(nil)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, r := range rz.Routes {
		seen[r.RemoteName] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// Close disconnects and shuts the NATS server down.
func (n *Node) Close() error {
	if n.nc != nil {
		_ = n.nc.Drain()
		n.nc.Close()
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	return nil
}

// maxNameLen bounds node names and workspace ids, which become NATS subject tokens and KV keys.
const maxNameLen = 128

// checkName refuses a node name or workspace id that is not 1 to maxNameLen letters, digits,
// _ and -, so that it is always one NATS subject token and a valid KV key.
func checkName(s string) error {
	if s == "" || len(s) > maxNameLen {
		return fmt.Errorf("%q: want 1 to %d characters", s, maxNameLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%q: use letters, digits, _ and - only", s)
		}
	}
	return nil
}

// objectStore creates (or binds) an object store kept on Replicas nodes' files, waiting as
// ensure does while the cluster forms.
func (n *Node) objectStore(ctx context.Context, bucket, description string) (jetstream.ObjectStore, error) {
	var obs jetstream.ObjectStore
	err := n.ensure(ctx, "object store "+bucket, func(ctx context.Context) (err error) {
		obs, err = n.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: bucket, Description: description, Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas,
		})
		return err
	})
	return obs, err
}

// ensure runs create (a stream or bucket creation) until it succeeds: while a cluster forms,
// JetStream refuses with "insufficient resources" or "no leader" until enough nodes joined.
func (n *Node) ensure(ctx context.Context, what string, create func(ctx context.Context) error) error {
	last := time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := create(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create %s: %w", what, err)
		}
		if time.Since(last) > 5*time.Second {
			n.log.Info("waiting to create "+what, "err", err)
			last = time.Now()
		}
		time.Sleep(250 * time.Millisecond)
	}
}
