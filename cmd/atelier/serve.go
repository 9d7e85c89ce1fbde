package main

import (
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

	"atelier/host/capability/events"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/host/store"
)

func serveCommand() command {
	return command{
		name:    "serve",
		usage:   "[--addr HOST:PORT] [--data FILE]",
		summary: "serve gadgets over Cap'n Web, with their state in a bbolt file",
		details: `Opens (or creates) the data file, then serves the API over Cap'n Web: WebSocket at /api and
HTTP batch at /api/batch. Stop it with Ctrl-C; calls in flight finish first.

Example:
  atelier serve --addr 127.0.0.1:8787 --data ./atelier.db
  atelier deploy counter gadget.wasm --grant atelier:host/kv   (in another terminal)`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			addr := fs.String("addr", "127.0.0.1:8787", "address to listen on")
			data := fs.String("data", defaultDataFile(), "the bbolt data file")
			cacheDir := fs.String("cache", "", "compiled-component cache directory (default: the user cache dir)")
			timeout := fs.Duration("call-timeout", 10*time.Second, "wall-clock limit of one gadget call")
			memory := fs.Int64("max-memory", 256<<20, "linear memory cap of one gadget instance, in bytes")
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usageError{"serve takes no arguments"}
				}
				return serve(ctx, *addr, *data, *cacheDir, runtime.Limits{Timeout: *timeout, MaxMemory: *memory})
			}
		},
	}
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

func serve(ctx context.Context, addr, dataFile, cacheDir string, limits runtime.Limits) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, err := store.Open(dataFile)
	if err != nil {
		return err
	}
	defer db.Close()
	bus := events.NewBus()
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(bus), Logger: logger})
	if err != nil {
		return fmt.Errorf("start runtime: %w", err)
	}
	defer rt.Close()
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Events: bus, Limits: limits, Logger: logger})
	defer k.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (pass another --addr)", addr, err)
	}
	srv := &http.Server{Handler: gateway.New(gateway.Config{Kernel: k, Logger: logger}), ReadHeaderTimeout: 10 * time.Second}
	logger.Info("atelier serving", "url", "http://"+ln.Addr().String(), "api", "ws://"+ln.Addr().String()+"/api", "data", dataFile)
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
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
