package gatekeeper_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// delivery is one webhook request the service sent to the test's receiver.
type delivery struct {
	Header http.Header
	Body   []byte
}

// receiver starts an HTTP server standing in for Atelier's /hooks/ route: it records each
// POST the service sends and answers 200.
func receiver(t *testing.T) (url string, got <-chan delivery) {
	t.Helper()
	ch := make(chan delivery, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- delivery{Header: r.Header.Clone(), Body: body}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

// next returns the next delivery; the bound only turns a lost delivery into a failure.
func next(t *testing.T, got <-chan delivery) delivery {
	t.Helper()
	select {
	case d := <-got:
		return d
	case <-time.After(time.Minute):
		t.Fatal("the service delivered no webhook request")
		return delivery{}
	}
}

// addNote adds a note to notebook nb at the service directly, as the user with token.
func (s *service) addNote(t *testing.T, nb, token, title string) note {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"title": title, "body": "body of " + title})
	req, err := http.NewRequest("POST", s.Origin+"/api/notebooks/"+nb+"/notes", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n note
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil || resp.StatusCode != 201 {
		t.Fatalf("add note: %d %v", resp.StatusCode, err)
	}
	return n
}

// webhooks lists the webhooks of notebook nb at the service.
func (s *service) webhooks(t *testing.T, nb, token string) []string {
	t.Helper()
	status, body := s.direct(t, "GET", "/api/notebooks/"+nb+"/webhooks", token)
	var res struct{ Webhooks []struct{ URL string } }
	if err := json.Unmarshal([]byte(body), &res); status != 200 || err != nil {
		t.Fatalf("list webhooks: %d %s", status, body)
	}
	var urls []string
	for _, w := range res.Webhooks {
		urls = append(urls, w.URL)
	}
	return urls
}

func secret(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, gatekeeper.HookSecretSize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHooksWebhook drives the notes gatekeeper's note-added webhook against the real service:
// subscribe creates the webhook there with the hook's URL and secret, the service's signed
// request verifies with the manifest's signature and the hook's secret, tampered, unprefixed,
// stale and unsigned requests are refused with their reasons, receive turns the request into
// the gadget's payload (observed for the hook's caller), and unsubscribe deletes the webhook.
func TestHooksWebhook(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runHooksWebhook(t, svc, install(t, rt, notesManifest(t, svc), guest(t, "gatekeepers/notes-go")))
}

// TestHooksWebhookExtism is TestHooksWebhook with the notes gatekeeper built as an Extism
// plugin (gatekeepers/notes-extism).
func TestHooksWebhookExtism(t *testing.T) {
	svc := startService(t)
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runHooksWebhook(t, svc, installExtism(t, e, extismManifest(t, svc), notesExtism(t)))
}

// runHooksWebhook is TestHooksWebhook on an installed notes gatekeeper of either format.
func runHooksWebhook(t *testing.T, svc *service, g *gatekeeper.Gatekeeper) {
	q := gatekeeper.NewMemoryQueue()
	in, s := start(t, g, "alice-work", svc.Origin+"/notebooks/work", aliceToken, q, nil)
	ctx := context.Background()
	spec, ok := g.Package.Manifest.HookSpec("note-added")
	if !ok || spec.Source != gatekeeper.HookWebhook || spec.Signature == nil {
		t.Fatalf("manifest event note-added: %+v %v", spec, ok)
	}
	sig := spec.Signature

	url, got := receiver(t)
	h := gatekeeper.Hook{ID: "hk_webhooktest", Event: "note-added", URL: url + "/hooks/hk_webhooktest", Secret: secret(t)}
	if err := s.SubscribeHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	if hooks := svc.webhooks(t, "work", aliceToken); len(hooks) != 1 || hooks[0] != h.URL {
		t.Fatalf("the service's webhooks after subscribe: %v, want [%s]", hooks, h.URL)
	}

	added := svc.addNote(t, "work", aliceToken, "from the service")
	d := next(t, got)
	if err := sig.Verify(h.Secret, d.Header, d.Body, time.Now()); err != nil {
		t.Fatalf("the service's request does not verify: %v", err)
	}

	// Refusals, each with its reason.
	with := func(edit func(http.Header)) http.Header {
		hd := d.Header.Clone()
		edit(hd)
		return hd
	}
	stale := func() http.Header {
		v, ts := sig.Sign(h.Secret, d.Body, time.Now().Add(-time.Hour))
		return with(func(hd http.Header) { hd.Set(sig.Header, v); hd.Set(sig.TimestampHeader, ts) })
	}()
	for _, c := range []struct {
		name   string
		secret []byte
		header http.Header
		body   []byte
		why    string
	}{
		{"wrong secret", secret(t), d.Header, d.Body, "does not match"},
		{"changed body", h.Secret, d.Header, append(bytes.Clone(d.Body), ' '), "does not match"},
		{"wrong prefix", h.Secret, with(func(hd http.Header) {
			hd.Set(sig.Header, "sha1="+strings.TrimPrefix(hd.Get(sig.Header), sig.Prefix))
		}), d.Body, `does not start with "sha256="`},
		{"not hex", h.Secret, with(func(hd http.Header) { hd.Set(sig.Header, sig.Prefix+"zz") }), d.Body, "is not hex"},
		{"stale timestamp", h.Secret, stale, d.Body, "outside the tolerance"},
		{"timestamp moved", h.Secret, with(func(hd http.Header) {
			ts, _ := strconv.ParseInt(hd.Get(sig.TimestampHeader), 10, 64)
			hd.Set(sig.TimestampHeader, strconv.FormatInt(ts+1, 10))
		}), d.Body, "does not match"},
		{"missing signature", h.Secret, with(func(hd http.Header) { hd.Del(sig.Header) }), d.Body, "missing signature header X-Notes-Signature"},
		{"missing timestamp", h.Secret, with(func(hd http.Header) { hd.Del(sig.TimestampHeader) }), d.Body, "timestamp header X-Notes-Timestamp"},
	} {
		err := sig.Verify(c.secret, c.header, c.body, time.Now())
		if !errors.Is(err, gatekeeper.ErrHookSignature) || !strings.Contains(err.Error(), c.why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line refusal saying %q", c.name, err, c.why)
		}
	}

	// Receive, on a session of the hook's own caller: the payload is {note}, observed.
	hs, err := in.OpenSession(ctx, "hook:"+h.ID)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := hs.ReceiveHook(ctx, h, d.Header, d.Body)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Note note }
	if err := json.Unmarshal(payload, &p); err != nil || p.Note != added {
		t.Fatalf("payload %s, want {note: %+v}", payload, added)
	}
	obs := q.List()
	if len(obs) != 1 || obs[0].Type != gatekeeper.Observed || obs[0].Caller != "hook:"+h.ID || !strings.Contains(obs[0].Title, "added to work") {
		t.Fatalf("receive was not observed for the hook: %+v", obs)
	}
	// An event of another notebook is dropped; a body that is no delivery is an error.
	other := bytes.Replace(d.Body, []byte(`"notebook":"work"`), []byte(`"notebook":"home"`), 1)
	if payload, err := hs.ReceiveHook(ctx, h, d.Header, other); err != nil || payload != nil {
		t.Fatalf("another notebook's event: %s %v, want it dropped", payload, err)
	}
	if _, err := hs.ReceiveHook(ctx, h, d.Header, []byte(`[1]`)); err == nil || !strings.Contains(err.Error(), "not {event, notebook, note}") {
		t.Fatalf("a body that is no delivery: %v", err)
	}
	// A webhook event cannot be polled.
	if _, err := hs.PollHook(ctx, h); err == nil || !strings.Contains(err.Error(), "comes from a webhook") {
		t.Fatalf("poll of a webhook event: %v", err)
	}

	if err := s.UnsubscribeHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	if hooks := svc.webhooks(t, "work", aliceToken); len(hooks) != 0 {
		t.Fatalf("the service's webhooks after unsubscribe: %v", hooks)
	}
}

// TestHooksPoll drives the notes gatekeeper's polled digest: nothing before any note is
// added, then the notes added since the last poll, then nothing again.
func TestHooksPoll(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runHooksPoll(t, svc, install(t, rt, notesManifest(t, svc), guest(t, "gatekeepers/notes-go")))
}

// TestHooksPollExtism is TestHooksPoll with the notes gatekeeper built as an Extism plugin.
func TestHooksPollExtism(t *testing.T) {
	svc := startService(t)
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runHooksPoll(t, svc, installExtism(t, e, extismManifest(t, svc), notesExtism(t)))
}

// runHooksPoll is TestHooksPoll on an installed notes gatekeeper of either format.
func runHooksPoll(t *testing.T, svc *service, g *gatekeeper.Gatekeeper) {
	q := gatekeeper.NewMemoryQueue()
	in, s := start(t, g, "bob-home", svc.Origin+"/notebooks/home", bobToken, q, nil)
	ctx := context.Background()
	before := svc.addNote(t, "home", bobToken, "before the hook")

	h := gatekeeper.Hook{ID: "hk_digesttest", Event: "digest"}
	if err := s.SubscribeHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	hs, err := in.OpenSession(ctx, "hook:"+h.ID)
	if err != nil {
		t.Fatal(err)
	}
	poll := func() []note {
		t.Helper()
		payload, err := hs.PollHook(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if payload == nil {
			return nil
		}
		var p struct{ Notes []note }
		if err := json.Unmarshal(payload, &p); err != nil || len(p.Notes) == 0 {
			t.Fatalf("payload %s: %v", payload, err)
		}
		return p.Notes
	}
	if got := poll(); got != nil {
		t.Fatalf("first poll: %+v, want nothing (note %d came before the hook)", got, before.ID)
	}
	a, b := svc.addNote(t, "home", bobToken, "one"), svc.addNote(t, "home", bobToken, "two")
	if got := poll(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("poll after two notes: %+v, want [%+v %+v]", got, a, b)
	}
	if got := poll(); got != nil {
		t.Fatalf("poll with nothing new: %+v", got)
	}
	if obs := q.List(); len(obs) != 1 || obs[0].Caller != "hook:"+h.ID || obs[0].Title != "Digest of home" {
		t.Fatalf("observations: %+v, want the one digest that returned notes", obs)
	}
	// A polled event gets no webhook requests.
	if _, err := hs.ReceiveHook(ctx, h, http.Header{}, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "comes from a poll") {
		t.Fatalf("receive of a poll event: %v", err)
	}
	if _, err := hs.WatchHook(ctx, h, func([]byte) {}); err == nil {
		t.Fatal("watch of a poll event was accepted")
	}
	if err := s.UnsubscribeHook(ctx, h); err != nil {
		t.Fatal(err)
	}
	// An event the manifest does not list.
	if err := s.SubscribeHook(ctx, gatekeeper.Hook{ID: "hk_x", Event: "note-removed"}); !errors.Is(err, gatekeeper.ErrNoHooks) {
		t.Fatalf("subscribe to an unknown event: %v", err)
	}
}

// TestHooksInstall: a manifest with hooks whose component does not export the hooks
// interface (or whose Extism plugin lacks the hook functions) is refused at install; a
// component of the hooks world under a manifest without hooks installs and serves no hooks.
func TestHooksInstall(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	notes := notesManifest(t, svc)

	probe := probeManifest(svc)
	probe.World, probe.Hooks = gatekeeper.WorldWithHooks, notes.Hooks
	archive, err := gatekeeper.Pack(probe, guest(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := gatekeeper.Install(context.Background(), rt, p); !errors.Is(err, gatekeeper.ErrWorldMismatch) ||
		!strings.Contains(err.Error(), "does not export") || !strings.Contains(err.Error(), "atelier:gatekeeper/hooks") {
		if g != nil {
			g.Close()
		}
		t.Fatalf("install of hooks without the export: %v", err)
	}

	plain := notes
	plain.World, plain.Hooks = gatekeeper.World, nil
	g := install(t, rt, plain, guest(t, "gatekeepers/notes-go"))
	_, s := start(t, g, "alice-work", svc.Origin+"/notebooks/work", aliceToken, gatekeeper.NewMemoryQueue(), nil)
	if err := s.SubscribeHook(context.Background(), gatekeeper.Hook{ID: "hk_y", Event: "digest"}); !errors.Is(err, gatekeeper.ErrNoHooks) {
		t.Fatalf("subscribe without manifest hooks: %v", err)
	}

	ext := extismManifest(t, svc)
	if g, err := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}}).Install(context.Background(), pack(t, ext, edgeExtism(t))); !errors.Is(err, gatekeeper.ErrWorldMismatch) ||
		!strings.Contains(err.Error(), "does not export") || !strings.Contains(err.Error(), "hook_subscribe") {
		if g != nil {
			g.Close()
		}
		t.Fatalf("install of an Extism plugin without the hook functions: %v", err)
	}
}

// FuzzHookSignatureVerify: Verify never panics and never accepts a request whose signature
// header is not the prefix and the encoded HMAC of the signed bytes; a correctly signed
// request is accepted. Run with `go test ./tests/gatekeeper -run '^$' -fuzz FuzzHookSignatureVerify`.
func FuzzHookSignatureVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add([]byte("secret"), []byte(`{"a":1}`), "sha256=00", "1800000000", uint8(0))
	f.Add([]byte("k"), []byte(""), "", "", uint8(1))
	f.Add([]byte("k"), []byte("x"), "sha256=+/==", "-1", uint8(2))
	f.Add([]byte{}, []byte("x"), "sha256=", "99999999999999999999", uint8(3))
	f.Fuzz(func(t *testing.T, key, body []byte, sigValue, ts string, mode uint8) {
		sig := &gatekeeper.HookSignature{Scheme: gatekeeper.SchemeHMACSHA256, Header: "X-Sig", Encoding: gatekeeper.EncodingHex}
		if mode&1 != 0 {
			sig.Encoding = gatekeeper.EncodingBase64
		}
		if mode&2 != 0 {
			sig.Prefix = "sha256="
		}
		if mode&4 != 0 {
			sig.TimestampHeader, sig.ToleranceSeconds = "X-Ts", 300
		}
		h := http.Header{}
		if mode&8 == 0 {
			h["X-Sig"] = []string{sigValue}
		}
		if mode&16 == 0 {
			h["X-Ts"] = []string{ts}
		}
		err := sig.Verify(key, h, body, now)
		if err != nil {
			if !errors.Is(err, gatekeeper.ErrHookSignature) {
				t.Fatalf("error without ErrHookSignature: %v", err)
			}
		} else {
			// Accepted: the header must hold exactly the right MAC.
			mac := hmac.New(sha256.New, key)
			if sig.TimestampHeader != "" {
				mac.Write([]byte(strings.TrimSpace(ts) + "."))
			}
			mac.Write(body)
			raw, ok := strings.CutPrefix(strings.TrimSpace(sigValue), sig.Prefix)
			var got []byte
			var derr error
			if sig.Encoding == gatekeeper.EncodingHex {
				got, derr = hex.DecodeString(raw)
			} else {
				got, derr = base64.StdEncoding.DecodeString(raw)
			}
			if len(key) == 0 || !ok || derr != nil || !hmac.Equal(got, mac.Sum(nil)) {
				t.Fatalf("accepted a wrong signature %q (mode %d, ts %q)", sigValue, mode, ts)
			}
		}
		// The right signature is accepted (with a non-empty key).
		if len(key) == 0 {
			return
		}
		v, stamp := sig.Sign(key, body, now)
		good := http.Header{"X-Sig": {v}}
		if stamp != "" {
			good["X-Ts"] = []string{stamp}
		}
		if err := sig.Verify(key, good, body, now); err != nil {
			t.Fatalf("refused a correct signature: %v", err)
		}
	})
}
