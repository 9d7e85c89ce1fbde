package gatekeeper

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hooksManifest is manifest() with a webhook and a poll event.
func hooksManifest() Manifest {
	m := manifest()
	m.Component.SHA256 = strings.Repeat("a", 64)
	m.World = WorldWithHooks
	m.Hooks = []HookSpec{
		{Event: "note-added", Title: "A note was added", Source: HookWebhook, Signature: &HookSignature{
			Scheme: SchemeHMACSHA256, Header: "X-Notes-Signature", Prefix: "sha256=", Encoding: EncodingHex,
			TimestampHeader: "X-Notes-Timestamp", ToleranceSeconds: 300}},
		{Event: "digest", Title: "Digest", Source: HookPoll, MinEveryMs: 60000},
		{Event: "ping", Title: "Ping", Source: HookNotify},
	}
	return m
}

func TestManifestHooks(t *testing.T) {
	m := hooksManifest()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if h, ok := m.HookSpec("digest"); !ok || h.MinEveryMs != 60000 {
		t.Fatalf("HookSpec(digest) = %+v %v", h, ok)
	}
	if _, ok := m.HookSpec("nope"); ok {
		t.Fatal("HookSpec found an event the manifest does not list")
	}
	for _, c := range []struct {
		name string
		edit func(*Manifest)
		want string
	}{
		{"plain world", func(m *Manifest) { m.World = World }, "must name the world " + WorldWithHooks},
		{"extism in the plain world", func(m *Manifest) { m.Format, m.World = FormatExtism, World }, "must name the world " + WorldWithHooks},
		{"event name", func(m *Manifest) { m.Hooks[1].Event = "Digest!" }, `hooks[1].event "Digest!"`},
		{"event twice", func(m *Manifest) { m.Hooks[1].Event = "note-added" }, `hooks[1].event "note-added"`},
		{"no title", func(m *Manifest) { m.Hooks[0].Title = " " }, "hooks[0].title"},
		{"source", func(m *Manifest) { m.Hooks[2].Source = "email" }, `hooks[2].source "email"`},
		{"webhook without signature", func(m *Manifest) { m.Hooks[0].Signature = nil }, "hooks[0].signature: a webhook event needs one"},
		{"poll with signature", func(m *Manifest) { m.Hooks[1].Signature = m.Hooks[0].Signature }, "hooks[1].signature: only a webhook"},
		{"poll too often", func(m *Manifest) { m.Hooks[1].MinEveryMs = 10 }, "hooks[1].minEveryMs 10"},
		{"poll without interval", func(m *Manifest) { m.Hooks[1].MinEveryMs = 0 }, "hooks[1].minEveryMs 0"},
		{"interval on a notify event", func(m *Manifest) { m.Hooks[2].MinEveryMs = 5000 }, "hooks[2].minEveryMs: only a poll"},
		{"scheme", func(m *Manifest) { m.Hooks[0].Signature.Scheme = "hmac-md5" }, `scheme "hmac-md5"`},
		{"encoding", func(m *Manifest) { m.Hooks[0].Signature.Encoding = "base32" }, `encoding "base32"`},
		{"header", func(m *Manifest) { m.Hooks[0].Signature.Header = "Bad Header" }, `header "Bad Header"`},
		{"managed header", func(m *Manifest) { m.Hooks[0].Signature.Header = "Content-Length" }, `header "Content-Length"`},
		{"prefix", func(m *Manifest) { m.Hooks[0].Signature.Prefix = "sha 256" }, `prefix "sha 256"`},
		{"timestamp header is the signature's", func(m *Manifest) { m.Hooks[0].Signature.TimestampHeader = "x-notes-signature" }, "timestampHeader"},
		{"tolerance", func(m *Manifest) { m.Hooks[0].Signature.ToleranceSeconds = 86400 }, "toleranceSeconds 86400"},
		{"tolerance without timestamp", func(m *Manifest) { m.Hooks[0].Signature.TimestampHeader = "" }, "toleranceSeconds: needs a timestampHeader"},
		{"too many", func(m *Manifest) {
			for len(m.Hooks) <= MaxHookSpecs {
				m.Hooks = append(m.Hooks, HookSpec{Event: "e" + strings.Repeat("x", len(m.Hooks)), Title: "t", Source: HookNotify})
			}
		}, "at most 32 events"},
	} {
		m := hooksManifest()
		sig := *m.Hooks[0].Signature
		m.Hooks[0].Signature = &sig
		c.edit(&m)
		err := m.Validate()
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a manifest error about %q", c.name, err, c.want)
		}
	}
	// Extism packages declare hooks alike; the hooks world without hooks is fine.
	m = hooksManifest()
	m.Format = FormatExtism
	if err := m.Validate(); err != nil {
		t.Fatalf("extism package with hooks: %v", err)
	}
	m = manifest()
	m.Component.SHA256 = strings.Repeat("a", 64)
	m.World = WorldWithHooks
	if err := m.Validate(); err != nil {
		t.Fatalf("hooks world without hooks: %v", err)
	}
}

func TestHookSignatureVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key, body := []byte("0123456789abcdef0123456789abcdef"), []byte(`{"event":"note-added"}`)
	for _, sig := range []*HookSignature{
		{Scheme: SchemeHMACSHA256, Header: "X-Sig", Encoding: EncodingHex},
		{Scheme: SchemeHMACSHA256, Header: "X-Sig", Encoding: EncodingBase64, Prefix: "v1="},
		{Scheme: SchemeHMACSHA256, Header: "X-Sig", Encoding: EncodingHex, TimestampHeader: "X-Ts"},
	} {
		v, ts := sig.Sign(key, body, now)
		h := http.Header{}
		h.Set("X-Sig", v)
		if ts != "" {
			h.Set("X-Ts", ts)
		}
		if err := sig.Verify(key, h, body, now); err != nil {
			t.Errorf("%+v: a correct signature was refused: %v", sig, err)
		}
		if sig.TimestampHeader != "" {
			// Within the default tolerance (300 s) either way, outside it refused.
			for _, d := range []time.Duration{299 * time.Second, -299 * time.Second} {
				if err := sig.Verify(key, h, body, now.Add(d)); err != nil {
					t.Errorf("%v away: %v", d, err)
				}
			}
			for _, d := range []time.Duration{301 * time.Second, -301 * time.Second} {
				if err := sig.Verify(key, h, body, now.Add(d)); !errors.Is(err, ErrHookSignature) || !strings.Contains(err.Error(), "outside the tolerance of 5m0s") {
					t.Errorf("%v away: %v", d, err)
				}
			}
			for _, bad := range []string{"+1800000000", "1.8e9", "", "18000000000000"} {
				h.Set("X-Ts", bad)
				if err := sig.Verify(key, h, body, now); !errors.Is(err, ErrHookSignature) {
					t.Errorf("timestamp %q: %v", bad, err)
				}
			}
		}
		h = http.Header{"X-Sig": {v, v}, "X-Ts": {ts}}
		if err := sig.Verify(key, h, body, now); !errors.Is(err, ErrHookSignature) || !strings.Contains(err.Error(), "2 X-Sig headers") {
			t.Errorf("two signature headers: %v", err)
		}
		if err := sig.Verify(nil, http.Header{"X-Sig": {v}, "X-Ts": {ts}}, body, now); !errors.Is(err, ErrHookSignature) || !strings.Contains(err.Error(), "no secret") {
			t.Errorf("no secret: %v", err)
		}
	}
	short := &HookSignature{Scheme: SchemeHMACSHA256, Header: "X-Sig", Encoding: EncodingHex}
	if err := short.Verify(key, http.Header{"X-Sig": {"abcd"}}, body, now); !errors.Is(err, ErrHookSignature) || !strings.Contains(err.Error(), "holds 2 bytes") {
		t.Errorf("short MAC: %v", err)
	}
}
