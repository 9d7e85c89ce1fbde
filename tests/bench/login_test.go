package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/store"
	capnwebtests "atelier/tests/capnweb"
)

// BenchmarkLogin runs rounds of 100 parallel logins over WebSocket against a kernel behind its
// gateway, as unauthenticated clients can: each names a username no account has, which costs
// one password hash of the real parameters (64 MiB) like a wrong password. A login refused as
// busy (UNAVAILABLE) is tried again 100 ms later, as a client would. It reports the logins
// answered per second, the busy refusals per round, and the growth of the process's peak
// resident memory (VmHWM, reset before the rounds) next to the budget of the hash slots
// (limit × 64 MiB).
func BenchmarkLogin(b *testing.B) {
	const clients = 100
	ctx := context.Background()
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	limit := auth.HashLimit(auth.DefaultParams) // the kernel's default, fixed here for the budget
	k := kernel.New(kernel.Config{Store: db, HashLimit: limit})
	defer k.Close()
	srv := httptest.NewServer(gateway.New(gateway.Config{Kernel: k}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api"
	mains := make([]*capnweb.Stub, clients)
	for i := range mains {
		s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		mains[i] = s.Main()
	}

	resetPeakRSS(b)
	base := procStatus(b, "VmRSS")
	var busy atomic.Int64
	start := time.Now()
	for round := 0; b.Loop(); round++ {
		var wg sync.WaitGroup
		for i, main := range mains {
			// A fresh username each round: 5 failures of one would hold its logins back.
			user := fmt.Sprintf("nobody-%d-%d", round, i)
			wg.Go(func() { busy.Add(login(b, main, user)) })
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	const mib = 1 << 20
	b.ReportMetric(float64(clients*b.N)/elapsed.Seconds(), "logins/s")
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/round")
	b.ReportMetric(float64(procStatus(b, "VmHWM")-base)/mib, "peak-rss-growth-MiB")
	b.ReportMetric(float64(limit*int(auth.DefaultParams.MemoryKiB)<<10)/mib, "budget-MiB")
}

// login logs in as user, expecting "wrong username or password", and tries again 100 ms
// after each busy refusal; it returns the number of those.
func login(b *testing.B, main *capnweb.Stub, user string) (busy int64) {
	for {
		_, err := main.Call(context.Background(), "login", user, "a password").Await(context.Background())
		var e *capnweb.Error
		if !errors.As(err, &e) {
			b.Errorf("login %s: %v, want UNAUTHORIZED", user, err)
			return busy
		}
		if e.Props["code"] != string(kernel.CodeUnavailable) {
			if e.Props["code"] != string(kernel.CodeUnauthorized) {
				b.Errorf("login %s: %v, want UNAUTHORIZED", user, err)
			}
			return busy
		}
		busy++
		time.Sleep(100 * time.Millisecond)
	}
}

// resetPeakRSS sets the process's VmHWM to its current resident size (Linux).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident size: %v", err)
	}
}

// procStatus reads a size field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	n, err := capnwebtests.ProcessStatus(os.Getpid(), field)
	if errors.Is(err, fs.ErrNotExist) {
		b.Skipf("no /proc/self/status: %v", err)
	} else if err != nil {
		b.Fatal(err)
	}
	return n
}
