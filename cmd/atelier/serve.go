package main

import (
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"atelier/host/gateway"
	"atelier/host/kernel"
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

Example:
  atelier serve --addr 127.0.0.1:8787 --data ./atelier.db`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			var o serveOptions
			fs.StringVar(&o.addr, "addr", "127.0.0.1:8787", "address to listen on")
			fs.StringVar(&o.data, "data", defaultDataFile(), "the bbolt data file")
			fs.StringVar(&o.cacheDir, "cache", "", "compiled-component cache directory (default: the user cache dir)")
			fs.DurationVar(&o.limits.Timeout, "call-timeout", 10*time.Second, "wall-clock limit of one gadget call")
			fs.Int64Var(&o.limits.MaxMemory, "max-memory", 256<<20, "linear memory cap of one gadget instance, in bytes")
			fs.DurationVar(&o.gadgetIdle, "gadget-idle", time.Minute, "evict a gadget's instance after this long without calls")
			fs.DurationVar(&o.workspaceIdle, "workspace-idle", 5*time.Minute, "stop an idle workspace's overseer after this long")
			fs.BoolVar(&o.noSignup, "no-signup", false, "refuse signup(): only the admin (and users created before) can log in")
			fs.BoolVar(&o.metricsPublic, "metrics-public", false, "serve /metrics to anyone (default: only with the admin user's token)")
			fs.Uint64Var(&o.retention.Audit, "keep-audit", store.DefaultAuditRetention, "audit lines kept per workspace (older ones are deleted)")
			fs.Uint64Var(&o.retention.Actions, "keep-actions", store.DefaultActionsRetention, "gatekeeper action-log entries kept per workspace, besides pending actions")
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
	limits                    runtime.Limits
	gadgetIdle, workspaceIdle time.Duration
	noSignup, metricsPublic   bool
	retention                 store.Retention
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
	db, err := store.Open(o.data)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetRetention(o.retention)
	rt, err := runtime.New(runtime.Config{CacheDir: o.cacheDir, Interfaces: kernel.HostInterfaces(nil), Logger: logger})
	if err != nil {
		return fmt.Errorf("start runtime: %w", err)
	}
	defer rt.Close()
	gkRuntime, extismEngine, err := gatekeeperEngines(o.cacheDir, logger)
	if err != nil {
		return err
	}
	defer gkRuntime.Close()
	defer extismEngine.Close()
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Limits: o.limits, Logger: logger, Version: versionString(),
		SignupsDisabled: o.noSignup, GadgetIdle: o.gadgetIdle, WorkspaceIdle: o.workspaceIdle,
		GatekeeperRuntime: gkRuntime, Extism: extismEngine, KeyFile: o.data + ".key"})
	defer k.Close()
	adminToken, err := k.Bootstrap(ctx)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (pass another --addr)", o.addr, err)
	}
	gw := gateway.New(gateway.Config{Kernel: k, Logger: logger, MetricsPublic: o.metricsPublic})
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(std.out, "%s\nserving http://%s (Cap'n Web: ws://%s/api, batch: http://%s/api/batch)\ndata: %s\n",
		versionString(), ln.Addr(), ln.Addr(), ln.Addr(), o.data)
	if adminToken != "" {
		fmt.Fprintf(std.out, "first run: admin token (shown once, keep it secret):\n  %s\n", adminToken)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
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
// for packages of that format. Both use the default egress rules: no private or loopback
// addresses, no redirects, bounded bodies.
func gatekeeperEngines(cacheDir string, logger *slog.Logger) (*runtime.Runtime, *extism.Engine, error) {
	ifaces, err := gatekeeper.Interfaces(outboundhttp.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("start gatekeeper runtime: %w", err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Logger: logger,
		Interfaces: ifaces})
	if err != nil {
		return nil, nil, fmt.Errorf("start gatekeeper runtime: %w", err)
	}
	eng, err := extism.New(extism.Options{})
	if err != nil {
		rt.Close()
		return nil, nil, fmt.Errorf("start extism engine: %w", err)
	}
	return rt, eng, nil
}
