package scrub_test

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp/internal/scrub"
)

const secret = "s3cr3t/t0ken+v@lue<&>"

// TestNeedlesCoverEncodings: every encoding named in docs/security.md is a needle; values
// shorter than MinLen give none.
func TestNeedlesCoverEncodings(t *testing.T) {
	got := scrub.Needles(secret, "short")
	for _, want := range []string{
		secret,
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret)),
		url.QueryEscape(secret), url.PathEscape(secret),
		`s3cr3t/t0ken+v@lue\u003c\u0026\u003e`, `s3cr3t\/t0ken+v@lue<&>`,
	} {
		if !strings.Contains("\x00"+strings.Join(got, "\x00")+"\x00", "\x00"+want+"\x00") {
			t.Errorf("Needles lacks %q (has %q)", want, got)
		}
	}
	for _, n := range got {
		if strings.Contains(n, "short") || n == base64.StdEncoding.EncodeToString([]byte("short")) {
			t.Errorf("Needles has %q, from a value shorter than MinLen", n)
		}
	}
}

// TestString replaces every needle, the longest of those starting at one place, and leaves
// everything else as it was.
func TestString(t *testing.T) {
	m := scrub.New(scrub.Needles("Bearer "+secret, secret))
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	for in, want := range map[string]string{
		"nothing here, Bearer s3cr3t/t0ken":     "nothing here, Bearer s3cr3t/t0ken",
		"Authorization: Bearer " + secret:       "Authorization: " + scrub.Marker,
		secret + secret:                         scrub.Marker + scrub.Marker,
		"x=" + url.QueryEscape(secret) + "&y=1": "x=" + scrub.Marker + "&y=1",
		`{"t":"` + b64 + `"}`:                   `{"t":"` + scrub.Marker + `"}`,
		"":                                      "",
	} {
		got, n := m.String(in)
		if got != want || n != strings.Count(want, scrub.Marker) {
			t.Errorf("String(%q) = %q, %d; want %q", in, got, n, want)
		}
	}
	if got, n := (*scrub.Matcher)(nil).String("anything"); got != "anything" || n != 0 {
		t.Errorf("a nil Matcher changed %q to %q", "anything", got)
	}
	if scrub.New(scrub.Needles("short")) != nil {
		t.Error("New of no needles is not nil")
	}
}

// TestWriterAcrossChunks: a needle split across writes at every position is replaced, and
// what surrounds it comes through unchanged, whatever the chunk size.
func TestWriterAcrossChunks(t *testing.T) {
	m := scrub.New(scrub.Needles(secret))
	b64 := base64.RawURLEncoding.EncodeToString([]byte(secret))
	body := strings.Repeat("lorem ipsum ", 500) + secret + " middle " + b64 + strings.Repeat(" dolor", 700) + secret
	want := strings.Repeat("lorem ipsum ", 500) + scrub.Marker + " middle " + scrub.Marker + strings.Repeat(" dolor", 700) + scrub.Marker
	for _, chunk := range []int{1, 2, 3, 7, 64, 4095, 4096, 5000, len(body)} {
		var out bytes.Buffer
		w := m.NewWriter(&out)
		for i := 0; i < len(body); i += chunk {
			if _, err := w.Write([]byte(body[i:min(i+chunk, len(body))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want || w.Replaced() != 3 {
			t.Errorf("chunks of %d: %d replacements, output differs: %q", chunk, w.Replaced(), out.String()[max(0, out.Len()-200):])
		}
	}
	// The needle split at every place between two writes.
	for cut := 0; cut <= len(secret); cut++ {
		var out bytes.Buffer
		w := m.NewWriter(&out)
		w.Write([]byte("a" + secret[:cut]))
		w.Write([]byte(secret[cut:] + "b"))
		w.Close()
		if out.String() != "a"+scrub.Marker+"b" {
			t.Errorf("split after %d bytes: %q", cut, out.String())
		}
	}
}

// TestWriterIsLinear: input full of needle prefixes, written a byte at a time, is scanned in
// time linear in its size (a quadratic scan of 4 MiB would take minutes).
func TestWriterIsLinear(t *testing.T) {
	m := scrub.New(scrub.Needles(strings.Repeat("a", 200) + "b"))
	body := []byte(strings.Repeat("a", 4<<20))
	start := time.Now()
	w := m.NewWriter(&bytes.Buffer{})
	for i := range body {
		w.Write(body[i : i+1])
	}
	w.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("4 MiB of near-matches took %v", d)
	}
}
