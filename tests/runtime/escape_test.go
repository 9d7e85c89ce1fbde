package runtime_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
)

func TestGuestCannotReadHostFiles(t *testing.T) {
	inst := newHarness(t).instantiate(t, fsEscape, "fs")
	for _, c := range []struct{ fn, path string }{
		{"read-file", "/etc/passwd"}, {"read-file", "etc/passwd"}, {"read-file", "../../../../etc/passwd"},
		{"read-dir", "/"}, {"read-dir", "."},
	} {
		res, err := inst.Call(context.Background(), c.fn, c.path)
		var rerr *runtime.ResultError
		if !errors.As(err, &rerr) {
			t.Fatalf("%s(%q) = %q, %v; want the guest to see an error", c.fn, c.path, res, err)
		}
		// Go's wasip1 port finds no preopened directory to resolve the path against.
		if msg, _ := rerr.Value.(string); !strings.Contains(msg, c.path) || strings.Contains(msg, "root:") {
			t.Fatalf("%s(%q) error %q: want a failure naming the path", c.fn, c.path, msg)
		}
		t.Logf("%s(%q) inside the guest: %v", c.fn, c.path, rerr.Value)
	}
}

func TestGuestCannotDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	comp := component(t, netEscape)
	for _, it := range comp.Audit().Imports {
		if strings.HasPrefix(it.Name, "wasi:sockets/") {
			t.Fatalf("net-escape imports %s; Go's wasip1 net package should need no sockets", it.Name)
		}
	}
	inst := newHarness(t).instantiate(t, netEscape, "net")
	_, err = inst.Call(context.Background(), "dial", ln.Addr().String())
	var rerr *runtime.ResultError
	if !errors.As(err, &rerr) {
		t.Fatalf("dial(%s): %v; want the guest to see an error", ln.Addr(), err)
	}
	t.Logf("dial inside the guest: %v", rerr.Value)
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("the guest's dial reached the host's listener")
	}
}

func TestSocketsImportIsRefusedBeforeInstantiation(t *testing.T) {
	comp := component(t, socketsWAT)
	h := newHarness(t)
	// Even with every atelier capability and the whole WASI baseline granted.
	_, err := sharedRuntime(t).Instantiate(context.Background(), comp,
		h.config("sockets", log.Grant, kv.Grant, events.Grant, "atelier:host/clock"))
	var refused []string
	for _, name := range []string{"wasi:sockets/network@0.2.0", "wasi:sockets/instance-network@0.2.0"} {
		if strings.Contains(err.Error(), `"`+name+`"`) {
			refused = append(refused, name)
		}
	}
	var ungranted *runtime.UngrantedImportError
	if !errors.As(err, &ungranted) || len(refused) != 2 {
		t.Fatalf("instantiate: %v; want UngrantedImportError naming both wasi:sockets imports", err)
	}
	if !strings.Contains(err.Error(), `grant "wasi:sockets/instance-network" would allow it`) {
		t.Fatalf("error %q does not name the grant", err)
	}
}

func TestGuestSeesNoEnvironmentOrArguments(t *testing.T) {
	t.Setenv("ATELIER_TEST_SECRET", "must-not-leak")
	inst := newHarness(t).instantiate(t, envEscape, "env")
	for _, fn := range []string{"env", "args"} {
		if got := call(t, inst, fn); !reflect.DeepEqual(got, []any{}) {
			t.Fatalf("%s() = %#v, want an empty list", fn, got)
		}
	}
}

func TestGuestStdioReachesConsole(t *testing.T) {
	h := newHarness(t)
	inst := h.instantiate(t, stdioGuest, "stdio")
	call(t, inst, "say", "hello")
	call(t, inst, "say", "wörld")
	want := []runtime.ConsoleLine{
		{Instance: "stdio", Stream: "stdout", Text: "hello"},
		{Instance: "stdio", Stream: "stderr", Text: "stderr: hello"},
		{Instance: "stdio", Stream: "stdout", Text: "wörld"},
		{Instance: "stdio", Stream: "stderr", Text: "stderr: wörld"},
	}
	if got := h.lines(); !reflect.DeepEqual(got, want) {
		t.Fatalf("console = %+v\nwant %+v", got, want)
	}
}
