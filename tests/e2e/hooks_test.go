package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
	"atelier/tests/notessvc"
	"atelier/tests/serveproc"
)

// The hooks of issue 19 end to end: a real `atelier serve` on a bbolt file, the test gadget
// tests/e2e/hookgadget, the real notes gatekeeper (gatekeepers/notes-go) and the loopback
// notes service that sends signed webhooks.

// hookGrants are the grants the test gadget is created with.
var hookGrants = []any{"atelier:host/kv", "atelier:host/log", "atelier:host/hooks"}

// hookServer is a running server with the notes gatekeeper installed, an account of the
// service's notebook connected and a workspace holding the test gadget bound to it.
type hookServer struct {
	svc   *notessvc.Service
	proc  *serveproc.Process
	api   *capnweb.Stub
	gk    string // the gatekeeper's id
	acct  string // the account bound as "notes"
	ws    *capnweb.Promise
	wsID  any
	wasm  []byte
	token string
}

// startHookServer starts the service and the server (with extra serve flags) and sets up the
// workspace "home" with gadget "hooker" bound to the notebook as "notes".
func startHookServer(t *testing.T, svc *notessvc.Service, extra ...string) *hookServer {
	t.Helper()
	bin := serveproc.Binary(t, tmpDir)
	args := append([]string{"--gatekeeper-allow-addr", svc.Addr}, extra...)
	proc := serveproc.Launch(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"), args...).Wait(t)
	h := &hookServer{svc: svc, proc: proc, wasm: guesttest.Bytes(t, "tests/e2e/hookgadget"), token: proc.AdminToken(t)}
	h.connect(t)
	h.gk = notessvc.Await(t, h.api.Call(context.Background(), "installGatekeeper", svc.Archive(t, svc.Manifest(t, 1000)))).(map[string]any)["id"].(string)
	h.acct = h.connectAccount(t)
	h.ws = h.api.Call(context.Background(), "createWorkspace", "home")
	h.wsID = notessvc.Await(t, h.ws.Call(context.Background(), "info")).(map[string]any)["id"]
	h.addGadget(t, h.ws, "hooker", h.acct)
	return h
}

// connect opens an admin session to the server (again after a restart).
func (h *hookServer) connect(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, h.proc.URL, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if h.api, err = capnweb.AwaitAs[*capnweb.Stub](ctx, s.Main().Call(ctx, "authenticate", h.token)); err != nil {
		t.Fatal(err)
	}
}

func (h *hookServer) connectAccount(t *testing.T) string {
	t.Helper()
	return notessvc.Await(t, h.api.Call(context.Background(), "connectAccount", h.gk, h.svc.Notebook(), map[string]any{"token": notessvc.Token})).(map[string]any)["id"].(string)
}

// addGadget creates the test gadget in ws and binds it to acct as "notes".
func (h *hookServer) addGadget(t *testing.T, ws *capnweb.Promise, name, acct string) {
	t.Helper()
	ctx := context.Background()
	notessvc.Await(t, ws.Call(ctx, "createGadget", name, h.wasm, hookGrants))
	notessvc.Await(t, ws.Call(ctx, "bindGatekeeper", name, "notes", acct))
}

// call calls method of gadget name in ws.
func call(t *testing.T, ws *capnweb.Promise, name, method string, args ...any) any {
	t.Helper()
	ctx := context.Background()
	return notessvc.Await(t, ws.Call(ctx, "gadget", name).Call(ctx, "connect").Call(ctx, method, args...))
}

// registered is what the test gadget's watch returns.
type registered struct {
	ID, URL, Source string
	Secret          []byte
}

// watch registers a hook from the gadget itself (atelier:host/hooks).
func watch(t *testing.T, ws *capnweb.Promise, gadget, event, method string) registered {
	t.Helper()
	var r struct{ ID, URL, Source, Secret string }
	if err := json.Unmarshal([]byte(call(t, ws, gadget, "watch", "notes", event, method, "").(string)), &r); err != nil {
		t.Fatal(err)
	}
	secret, err := base64.StdEncoding.DecodeString(r.Secret)
	if err != nil || !strings.HasPrefix(r.ID, "hk_") || !strings.HasSuffix(r.URL, "/hooks/"+r.ID) {
		t.Fatalf("watch returned %+v (%v)", r, err)
	}
	return registered{ID: r.ID, URL: r.URL, Source: r.Source, Secret: secret}
}

// received returns the payloads the gadget's hook method kept.
func received(t *testing.T, ws *capnweb.Promise, gadget string) []string {
	t.Helper()
	var out []string
	for _, p := range call(t, ws, gadget, "received").([]any) {
		out = append(out, p.(string))
	}
	return out
}

// awaitReceived waits until the gadget kept n payloads and returns them.
func awaitReceived(t *testing.T, ws *capnweb.Promise, gadget string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := received(t, ws, gadget)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("gadget %s kept %d payloads, want %d: %q", gadget, len(got), n, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hookIDs lists the ids listHooks returns in ws (of gadget, "" for all).
func hookIDs(t *testing.T, ws *capnweb.Promise, gadget string) []string {
	t.Helper()
	ids := []string{}
	for _, h := range notessvc.Await(t, ws.Call(context.Background(), "listHooks", gadget)).([]any) {
		ids = append(ids, h.(map[string]any)["id"].(string))
	}
	return ids
}

// refused wants p to fail with code and a message containing want.
func refused(t *testing.T, p *capnweb.Promise, code, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.Await(ctx)
	var ce *capnweb.Error
	if !errors.As(err, &ce) || ce.Props["code"] != code || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %s with %q", err, code, want)
	}
}

// TestHookFiresFromTheServiceAndSurvivesRestart: the gadget registers a hook; a note added at
// the service reaches the gadget's method through the signed webhook; bad signatures, replays,
// unknown ids, oversized bodies, a hook over its rate and an address past its refused requests
// are answered with their statuses and
// leave the host serving; after a restart on the same data file the hook still fires.
func TestHookFiresFromTheServiceAndSurvivesRestart(t *testing.T) {
	svc := notessvc.Start(t)
	h := startHookServer(t, svc, "--hook-rate", "0.01", "--hook-burst", "4")
	ctx := context.Background()
	hk := watch(t, h.ws, "hooker", "note-added", "onEvent")
	if hk.Source != "webhook" || len(hk.Secret) != 32 {
		t.Fatalf("hook %+v: want a webhook with a 32-byte secret", hk)
	}
	if urls := svc.Webhooks(t); !slices.Contains(urls, hk.URL) {
		t.Fatalf("the service's webhooks %q lack the hook's URL %s", urls, hk.URL)
	}

	svc.AddNote(t, "first")
	got := awaitReceived(t, h.ws, "hooker", 1)
	var payload struct{ Note struct{ Title string } }
	if err := json.Unmarshal([]byte(got[0]), &payload); err != nil || payload.Note.Title != "first" {
		t.Fatalf("payload %q: want {note} with title first (%v)", got[0], err)
	}
	list := notessvc.Await(t, h.ws.Call(ctx, "listHooks", "hooker")).([]any)
	info := list[0].(map[string]any)
	if len(list) != 1 || info["id"] != hk.ID || info["fires"] != float64(1) || info["gadgetName"] != "hooker" || info["gatekeeper"] != "notes" ||
		info["event"] != "note-added" || info["method"] != "onEvent" || info["source"] != "webhook" || info["url"] != hk.URL || info["creator"] != "admin" {
		t.Fatalf("listHooks = %v", list)
	}
	if _, ok := info["secret"]; ok {
		t.Fatal("listHooks shows the secret")
	}
	// A signed request made by hand fires too (the second token of the hook's burst).
	if status, out, _ := notessvc.Post(t, hk.URL, notessvc.NoteEvent(7, "by hand"), hk.Secret, time.Now()); status != 200 || out["ok"] != true {
		t.Fatalf("signed request: %d %v", status, out)
	}
	awaitReceived(t, h.ws, "hooker", 2)

	for _, c := range []struct {
		name   string
		secret []byte
		ts     time.Time
		want   string
	}{
		{"bad signature", []byte("not the secret, not the secret!!"), time.Now(), "signature does not match"},
		{"replayed timestamp", hk.Secret, time.Now().Add(-time.Hour), "outside the tolerance"},
	} {
		status, out, hdr := notessvc.Post(t, hk.URL, notessvc.NoteEvent(8, c.name), c.secret, c.ts)
		if status != http.StatusUnauthorized || out["ok"] != false || !strings.Contains(fmt.Sprint(out["error"]), c.want) || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %v, want 401 saying %q", c.name, status, out, c.want)
		}
	}
	base := strings.TrimSuffix(hk.URL, hk.ID)
	for _, id := range []string{"hk_aaaaaaaaaaaaaaaaaaaaaaaa", "hk_short", "nothook"} {
		if status, out, _ := notessvc.Post(t, base+id, notessvc.NoteEvent(9, "x"), hk.Secret, time.Now()); status != http.StatusNotFound || out["ok"] != false {
			t.Errorf("unknown hook %s: %d %v, want 404", id, status, out)
		}
	}
	big := []byte(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	if status, _, _ := notessvc.Post(t, hk.URL, big, hk.Secret, time.Now()); status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d, want 413", status)
	}
	// The burst is 4 and the rate one per 100 s: two more pass, then 429 with Retry-After.
	for i := range 2 {
		if status, out, _ := notessvc.Post(t, hk.URL, notessvc.NoteEvent(10+i, "burst"), hk.Secret, time.Now()); status != 200 {
			t.Fatalf("request %d of the burst: %d %v", i+3, status, out)
		}
	}
	status, out, hdr := notessvc.Post(t, hk.URL, notessvc.NoteEvent(20, "over the rate"), hk.Secret, time.Now())
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || out["ok"] != false {
		t.Fatalf("over the rate: %d %v (Retry-After %q), want 429 with Retry-After", status, out, hdr.Get("Retry-After"))
	}
	if got := received(t, h.ws, "hooker"); len(got) != 4 {
		t.Fatalf("after the refused requests the gadget kept %d payloads, want 4: %q", len(got), got)
	}

	// A gadget method that fails answers 502 and is recorded.
	bad := watch(t, h.ws, "hooker", "note-added", "refuse")
	if status, out, _ := notessvc.Post(t, bad.URL, notessvc.NoteEvent(30, "refused"), bad.Secret, time.Now()); status != http.StatusBadGateway || !strings.Contains(fmt.Sprint(out["error"]), "refused a payload") {
		t.Fatalf("failing method: %d %v, want 502 with its error", status, out)
	}
	for _, hi := range notessvc.Await(t, h.ws.Call(ctx, "listHooks", "")).([]any) {
		if m := hi.(map[string]any); m["id"] == bad.ID && !strings.Contains(fmt.Sprint(m["lastError"]), "refused a payload") {
			t.Fatalf("listHooks after a failed fire: %v", m)
		}
	}
	// Requests that fail the signature check are bounded per hook and address: 20, then 429.
	for i := range 20 {
		if status, _, _ := notessvc.Post(t, bad.URL, notessvc.NoteEvent(40+i, "forged"), []byte("a stranger's guess at the secret"), time.Now()); status != http.StatusUnauthorized {
			t.Fatalf("forged request %d: %d, want 401", i+1, status)
		}
	}
	if status, out, hdr := notessvc.Post(t, bad.URL, notessvc.NoteEvent(60, "forged"), []byte("a stranger's guess at the secret"), time.Now()); status != http.StatusTooManyRequests ||
		hdr.Get("Retry-After") == "" || !strings.Contains(fmt.Sprint(out["error"]), "failed the signature check") {
		t.Fatalf("the 21st forged request: %d %v, want 429 naming the signature check", status, out)
	}
	notessvc.Await(t, h.ws.Call(ctx, "removeHook", bad.ID))

	// Restart on the same data file: the hook is still there and fires (the limiter starts
	// afresh).
	h.proc.Terminate(t)
	h.proc = h.proc.Restart(t)
	h.connect(t)
	h.ws = h.api.Call(ctx, "openWorkspace", h.wsID)
	if ids := hookIDs(t, h.ws, ""); !slices.Equal(ids, []string{hk.ID}) {
		t.Fatalf("hooks after the restart: %q, want [%s]", ids, hk.ID)
	}
	svc.AddNote(t, "after restart")
	got = awaitReceived(t, h.ws, "hooker", 5)
	if !strings.Contains(got[4], "after restart") {
		t.Fatalf("payload after the restart: %q", got[4])
	}
}

// TestHookSlowSendersAreBounded: requests to a hook's URL that never finish their body hold
// at most a quarter of the server's places for deliveries per address (16 of 64): of 17 such
// requests one is answered 429 with Retry-After at once, and so is a signed request while the
// 16 wait; each slow one is answered 408 once its body is 10 s late, and then the address's
// signed requests are delivered again.
func TestHookSlowSendersAreBounded(t *testing.T) {
	svc := notessvc.Start(t)
	h := startHookServer(t, svc)
	hk := watch(t, h.ws, "hooker", "note-added", "onEvent")
	u, err := url.Parse(hk.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The hook answers once it is in the server's index (an unknown id is answered at once,
	// without reading the body).
	deadline := time.Now().Add(10 * time.Second)
	for status, out, _ := notessvc.Post(t, hk.URL, notessvc.NoteEvent(1, "before"), hk.Secret, time.Now()); status != http.StatusOK; status, out, _ = notessvc.Post(t, hk.URL, notessvc.NoteEvent(1, "before"), hk.Secret, time.Now()) {
		if time.Now().After(deadline) {
			t.Fatalf("a signed request before the slow ones: %d %v, want 200", status, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The slow requests reach the handler in their own order: whichever comes 17th is refused.
	type answer struct {
		status     int
		retryAfter string
		err        error
	}
	answers := make(chan answer, 17)
	for range 17 {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"note\":", u.Path, u.Host)
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			resp.Body.Close()
			answers <- answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		}()
	}
	if a := <-answers; a.status != http.StatusTooManyRequests || a.retryAfter == "" {
		t.Fatalf("the first answer to 17 slow requests of one address: %+v, want 429 with Retry-After", a)
	}
	status, out, hdr := notessvc.Post(t, hk.URL, notessvc.NoteEvent(2, "while slow"), hk.Secret, time.Now())
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || !strings.Contains(fmt.Sprint(out["error"]), "from your address in flight") {
		t.Fatalf("a signed request while 16 slow ones of its address wait: %d %v, want 429 naming the deliveries in flight", status, out)
	}
	for i := range 16 {
		if a := <-answers; a.status != http.StatusRequestTimeout {
			t.Fatalf("slow request %d: %+v, want 408 once its body is late", i, a)
		}
	}
	if status, out, _ := notessvc.Post(t, hk.URL, notessvc.NoteEvent(3, "after"), hk.Secret, time.Now()); status != http.StatusOK {
		t.Fatalf("a signed request after the slow ones ended: %d %v, want 200", status, out)
	}
}

// TestHooksEndWithTheirGadgetBindingOrAccount: deleting the gadget, unbinding it and
// disconnecting the account each remove the hooks they carried (listHooks no longer shows
// them, their URLs answer 404, the service's webhook is deleted); another workspace can
// neither list nor remove a hook; the bounds on params and on the number of hooks hold; a
// poll hook fires when the gatekeeper's poll finds notes.
func TestHooksEndWithTheirGadgetBindingOrAccount(t *testing.T) {
	svc := notessvc.Start(t)
	h := startHookServer(t, svc)
	ctx := context.Background()
	gone := func(what string, hk registered) {
		t.Helper()
		if ids := hookIDs(t, h.ws, ""); slices.Contains(ids, hk.ID) {
			t.Fatalf("after %s listHooks still shows %s: %q", what, hk.ID, ids)
		}
		if status, out, _ := notessvc.Post(t, hk.URL, notessvc.NoteEvent(1, what), hk.Secret, time.Now()); status != http.StatusNotFound {
			t.Fatalf("after %s the hook's URL answers %d %v, want 404", what, status, out)
		}
		for deadline := time.Now().Add(30 * time.Second); slices.Contains(svc.Webhooks(t), hk.URL); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %s the service still has the webhook %s", what, hk.URL)
			}
		}
	}

	// Gadget deleted.
	h.addGadget(t, h.ws, "doomed", h.acct)
	hk := watch(t, h.ws, "doomed", "note-added", "onEvent")
	notessvc.Await(t, h.ws.Call(ctx, "gadget", "doomed").Call(ctx, "delete"))
	gone("deleting the gadget", hk)

	// Binding removed; bound again, the gadget registers anew.
	hk = watch(t, h.ws, "hooker", "note-added", "onEvent")
	notessvc.Await(t, h.ws.Call(ctx, "unbindGatekeeper", "hooker", "notes"))
	gone("unbinding", hk)
	notessvc.Await(t, h.ws.Call(ctx, "bindGatekeeper", "hooker", "notes", h.acct))

	// Account disconnected: only the hooks of that account go.
	other := h.connectAccount(t)
	h.addGadget(t, h.ws, "second", other)
	hk = watch(t, h.ws, "second", "note-added", "onEvent")
	kept := watch(t, h.ws, "hooker", "note-added", "onEvent")
	notessvc.Await(t, h.api.Call(ctx, "disconnectAccount", other))
	gone("disconnecting the account", hk)
	if ids := hookIDs(t, h.ws, "hooker"); !slices.Equal(ids, []string{kept.ID}) {
		t.Fatalf("hooks of the account still connected: %q, want [%s]", ids, kept.ID)
	}

	// Another workspace of the same user sees none of it.
	ws2 := h.api.Call(ctx, "createWorkspace", "elsewhere")
	if ids := hookIDs(t, ws2, ""); len(ids) != 0 {
		t.Fatalf("listHooks in another workspace: %q", ids)
	}
	refused(t, ws2.Call(ctx, "removeHook", kept.ID), "NOT_FOUND", "no hook")
	if ids := hookIDs(t, h.ws, ""); !slices.Contains(ids, kept.ID) {
		t.Fatal("removeHook from another workspace removed the hook")
	}
	// The gadget lists and removes its own hooks.
	if ids := call(t, h.ws, "hooker", "watching").([]any); len(ids) != 1 || ids[0] != kept.ID {
		t.Fatalf("the gadget's list: %v", ids)
	}
	call(t, h.ws, "hooker", "unwatch", kept.ID)
	gone("the gadget removing it", kept)

	// Bounds and refusals of registerHook (the builders' API).
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "onEvent", strings.Repeat("x", 5000)), "INVALID_ARGUMENT", "exceed 4096")
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "no-such-event", "onEvent"), "INVALID_ARGUMENT", "its events: note-added, digest")
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "nobinding", "digest", "onEvent"), "NOT_FOUND", "no gatekeeper binding")
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "noSuchMethod"), "NOT_FOUND", "no exported function")
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "received"), "INVALID_ARGUMENT", "takes one argument")
	var ids []string
	for range 50 {
		info := notessvc.Await(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "onEvent", map[string]any{"everyMs": 3_600_000})).(map[string]any)
		ids = append(ids, info["id"].(string))
	}
	refused(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "onEvent"), "FAILED_PRECONDITION", "has 50 hooks already")
	for _, id := range ids {
		notessvc.Await(t, h.ws.Call(ctx, "removeHook", id))
	}

	// A poll hook (the digest event, at least every second here) fires once the poll finds
	// the notes added since it was registered.
	poll := notessvc.Await(t, h.ws.Call(ctx, "registerHook", "hooker", "notes", "digest", "onEvent")).(map[string]any)
	if poll["source"] != "poll" || poll["url"] != "" {
		t.Fatalf("digest hook: %v (want source poll and no URL: only webhooks have one)", poll)
	}
	before := len(received(t, h.ws, "hooker"))
	svc.AddNote(t, "polled")
	got := awaitReceived(t, h.ws, "hooker", before+1)
	if !strings.Contains(got[before], "polled") || !strings.Contains(got[before], "notes") {
		t.Fatalf("poll payload %q: want {notes} with the note polled", got[before])
	}
}
