package gatekeeper

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WorldWithHooks is the WIT world of a gatekeeper that also serves hooks: it includes World and
// exports HooksInterface. A manifest that declares hooks must name it.
const WorldWithHooks = "atelier:gatekeeper/gatekeeper-with-hooks@0.1.0"

// HooksInterface is the interface a gatekeeper of WorldWithHooks exports (unversioned, as
// calls name it).
const HooksInterface = "atelier:gatekeeper/hooks"

// Sources of a hook's events (HookSpec.Source).
const (
	// HookWebhook: the service POSTs to the hook's public URL; the host checks the request's
	// signature (HookSpec.Signature) and hands it to the guest's receive.
	HookWebhook = "webhook"
	// HookPoll: the host calls the guest's poll every HookSpec.MinEveryMs at most.
	HookPoll = "poll"
	// HookNotify: the guest pushes events while the host keeps a watch running (HookWatcher).
	HookNotify = "notify"
)

// SchemeHMACSHA256 is the only signature scheme: HMAC-SHA256 keyed with the hook's secret.
const SchemeHMACSHA256 = "hmac-sha256"

// Encodings of a webhook signature (HookSignature.Encoding).
const (
	// EncodingHex is lower- or upper-case hexadecimal.
	EncodingHex = "hex"
	// EncodingBase64 is standard base64 with padding (RFC 4648 section 4).
	EncodingBase64 = "base64"
)

// Bounds of the manifest's hooks.
const (
	// MaxHookSpecs bounds Manifest.Hooks.
	MaxHookSpecs = 32
	// MinPollEveryMs and MaxPollEveryMs bound HookSpec.MinEveryMs of a poll event.
	MinPollEveryMs = 1000
	MaxPollEveryMs = 24 * 60 * 60 * 1000
	// DefaultHookTolerance is the tolerance of a signature's timestamp when the manifest sets
	// a timestampHeader without toleranceSeconds.
	DefaultHookTolerance = 300
	// MaxHookTolerance bounds HookSignature.ToleranceSeconds.
	MaxHookTolerance = 3600
	// HookSecretSize is the size of the secret the host generates for each webhook hook.
	HookSecretSize = 32
)

// HookSpec is one event of the manifest's hooks: what a gadget may register a hook for.
type HookSpec struct {
	// Event names the event ("note-added"): lowercase letters, digits and dashes, unique.
	Event string `json:"event"`
	// Title is one line for users ("A note was added").
	Title string `json:"title"`
	// Description says more (optional).
	Description string `json:"description,omitempty"`
	// Source is HookWebhook, HookPoll or HookNotify.
	Source string `json:"source"`
	// MinEveryMs is the shortest interval between two polls (poll events only).
	MinEveryMs int64 `json:"minEveryMs,omitempty"`
	// Signature is how the service signs its webhook requests (webhook events only, required).
	Signature *HookSignature `json:"signature,omitempty"`
}

// HookSignature is how an inbound webhook proves it came from the service: Header carries
// Prefix followed by the HMAC-SHA256 (keyed with the hook's secret) of the body, or, with a
// TimestampHeader, of the timestamp (Unix seconds), "." and the body, in Encoding.
type HookSignature struct {
	// Scheme is SchemeHMACSHA256.
	Scheme string `json:"scheme"`
	// Header is the request header that carries the signature ("X-Notes-Signature").
	Header string `json:"header"`
	// Prefix, when set, starts the header's value ("sha256=").
	Prefix string `json:"prefix,omitempty"`
	// Encoding is EncodingHex or EncodingBase64.
	Encoding string `json:"encoding"`
	// TimestampHeader, when set, is the header with the request's time in Unix seconds; it is
	// signed with the body, and a request outside ToleranceSeconds of now is refused (replay).
	TimestampHeader string `json:"timestampHeader,omitempty"`
	// ToleranceSeconds bounds the timestamp's distance from now (with TimestampHeader only;
	// 0 means DefaultHookTolerance).
	ToleranceSeconds int `json:"toleranceSeconds,omitempty"`
}

// Hook is what the guest learns of one registered hook.
type Hook struct {
	// ID is the hook's id ("hk_…").
	ID string
	// Event is one of the manifest's hooks[].event.
	Event string
	// Params is the JSON the gadget registered the hook with ("" when none).
	Params string
	// URL is the public URL the service POSTs to (.../hooks/<id>; webhook hooks).
	URL string
	// Secret keys the webhook's HMAC (webhook hooks; HookSecretSize random bytes).
	Secret []byte
}

// ErrNoHooks: the gatekeeper does not implement hooks (or not the source asked for).
var ErrNoHooks = errors.New("the gatekeeper does not implement hooks")

// ErrHookSignature marks an inbound webhook request refused by HookSignature.Verify; the
// error's text says why in one line.
var ErrHookSignature = errors.New("webhook signature refused")

// signaturePrefix is what HookSignature.Prefix may hold: printable ASCII without spaces.
var signaturePrefix = regexp.MustCompile(`^[\x21-\x7e]{1,64}$`)

// validateHooks checks the hooks block and that the world matches it.
func (m *Manifest) validateHooks(bad func(string, ...any)) {
	if len(m.Hooks) == 0 {
		return
	}
	if m.World != WorldWithHooks && m.Format != FormatBuiltin {
		bad("hooks: a manifest with hooks must name the world %s (a component exports %s, an Extism plugin the hook_* functions)", WorldWithHooks, HooksInterface)
	}
	if len(m.Hooks) > MaxHookSpecs {
		bad("hooks: at most %d events", MaxHookSpecs)
	}
	seen := map[string]bool{}
	for i, h := range m.Hooks {
		at := fmt.Sprintf("hooks[%d]", i)
		if !namePattern.MatchString(h.Event) || seen[h.Event] {
			bad("%s.event %q: want a unique lowercase name (letters, digits, dashes; 1-64, starting with a letter)", at, h.Event)
		}
		seen[h.Event] = true
		if strings.TrimSpace(h.Title) == "" || len(h.Title) > 200 || strings.ContainsAny(h.Title, "\r\n") {
			bad("%s.title: want one line of 1-200 characters", at)
		}
		if len(h.Description) > 2000 {
			bad("%s.description: at most 2000 characters", at)
		}
		switch h.Source {
		case HookWebhook:
			if h.Signature == nil {
				bad("%s.signature: a webhook event needs one (how the service signs its requests)", at)
			} else {
				h.Signature.validate(at+".signature", bad)
			}
		case HookPoll, HookNotify:
			if h.Signature != nil {
				bad("%s.signature: only a webhook event has one", at)
			}
		default:
			bad("%s.source %q: want %s, %s or %s", at, h.Source, HookWebhook, HookPoll, HookNotify)
		}
		if h.Source == HookPoll {
			if h.MinEveryMs < MinPollEveryMs || h.MinEveryMs > MaxPollEveryMs {
				bad("%s.minEveryMs %d: a poll event polls at most every %d to %d ms", at, h.MinEveryMs, MinPollEveryMs, MaxPollEveryMs)
			}
		} else if h.MinEveryMs != 0 {
			bad("%s.minEveryMs: only a poll event has one", at)
		}
	}
}

// validate checks a webhook event's signature block.
func (s *HookSignature) validate(at string, bad func(string, ...any)) {
	if s.Scheme != SchemeHMACSHA256 {
		bad("%s.scheme %q: want %s", at, s.Scheme, SchemeHMACSHA256)
	}
	if !tokenPattern.MatchString(s.Header) || slices.Contains(forbiddenCredentialHeaders, strings.ToLower(s.Header)) {
		bad("%s.header %q: want a header name the transport does not manage", at, s.Header)
	}
	if s.Prefix != "" && !signaturePrefix.MatchString(s.Prefix) {
		bad("%s.prefix %q: want 1-64 printable ASCII characters without spaces", at, s.Prefix)
	}
	if s.Encoding != EncodingHex && s.Encoding != EncodingBase64 {
		bad("%s.encoding %q: want %s or %s", at, s.Encoding, EncodingHex, EncodingBase64)
	}
	if s.TimestampHeader == "" {
		if s.ToleranceSeconds != 0 {
			bad("%s.toleranceSeconds: needs a timestampHeader", at)
		}
		return
	}
	if !tokenPattern.MatchString(s.TimestampHeader) || strings.EqualFold(s.TimestampHeader, s.Header) ||
		slices.Contains(forbiddenCredentialHeaders, strings.ToLower(s.TimestampHeader)) {
		bad("%s.timestampHeader %q: want a header name other than the signature's that the transport does not manage", at, s.TimestampHeader)
	}
	if s.ToleranceSeconds < 0 || s.ToleranceSeconds > MaxHookTolerance {
		bad("%s.toleranceSeconds %d: want 1 to %d (0: %d)", at, s.ToleranceSeconds, MaxHookTolerance, DefaultHookTolerance)
	}
}

// HookSpec returns the manifest's hook event named event.
func (m *Manifest) HookSpec(event string) (HookSpec, bool) {
	for _, h := range m.Hooks {
		if h.Event == event {
			return h, true
		}
	}
	return HookSpec{}, false
}

// Tolerance returns how far a signed timestamp may be from now (0 without TimestampHeader).
func (s *HookSignature) Tolerance() time.Duration {
	switch {
	case s.TimestampHeader == "":
		return 0
	case s.ToleranceSeconds <= 0:
		return DefaultHookTolerance * time.Second
	}
	return time.Duration(s.ToleranceSeconds) * time.Second
}

// Sign returns the value of Header for body sent at now (and, with TimestampHeader, the
// timestamp to send): what a service does, for tests and for vendors checking their setup.
func (s *HookSignature) Sign(secret, body []byte, now time.Time) (signature, timestamp string) {
	mac := hmac.New(sha256.New, secret)
	if s.TimestampHeader != "" {
		timestamp = strconv.FormatInt(now.Unix(), 10)
		mac.Write([]byte(timestamp + "."))
	}
	mac.Write(body)
	sum := mac.Sum(nil)
	if s.Encoding == EncodingBase64 {
		return s.Prefix + base64.StdEncoding.EncodeToString(sum), timestamp
	}
	return s.Prefix + hex.EncodeToString(sum), timestamp
}

// refused is a Verify error: ErrHookSignature with a reason.
func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrHookSignature}, args...)...)
}

// Verify checks the request's signature with the hook's secret (constant time) and, with a
// TimestampHeader, that the request was signed within the tolerance of now (a replay is
// refused). The error wraps ErrHookSignature and says why in one line.
func (s *HookSignature) Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	if s.Scheme != SchemeHMACSHA256 {
		return refused("unknown signature scheme %q", s.Scheme)
	}
	if len(secret) == 0 {
		return refused("the hook has no secret")
	}
	values := h.Values(s.Header)
	switch len(values) {
	case 0:
		return refused("missing signature header %s", s.Header)
	case 1:
	default:
		return refused("%d %s headers; want one", len(values), s.Header)
	}
	raw, ok := strings.CutPrefix(strings.TrimSpace(values[0]), s.Prefix)
	if !ok {
		return refused("header %s does not start with %q", s.Header, s.Prefix)
	}
	var got []byte
	var err error
	switch s.Encoding {
	case EncodingHex:
		got, err = hex.DecodeString(raw)
	case EncodingBase64:
		got, err = base64.StdEncoding.DecodeString(raw)
	default:
		return refused("unknown signature encoding %q", s.Encoding)
	}
	if err != nil {
		return refused("header %s is not %s", s.Header, s.Encoding)
	}
	if len(got) != sha256.Size {
		return refused("header %s holds %d bytes, not an HMAC-SHA256 (%d)", s.Header, len(got), sha256.Size)
	}
	mac := hmac.New(sha256.New, secret)
	if s.TimestampHeader != "" {
		ts := h.Values(s.TimestampHeader)
		if len(ts) != 1 {
			return refused("want one timestamp header %s, got %d", s.TimestampHeader, len(ts))
		}
		v := strings.TrimSpace(ts[0])
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(v) > 12 || v[0] == '+' || v[0] == '-' {
			return refused("timestamp header %s is not Unix seconds", s.TimestampHeader)
		}
		tol := s.Tolerance()
		if d := now.Sub(time.Unix(sec, 0)); d > tol || d < -tol {
			return refused("timestamp %s is %s away from now, outside the tolerance of %s (a replay or a wrong clock)", v, d.Abs().Round(time.Second), tol)
		}
		mac.Write([]byte(v + "."))
	}
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), got) {
		return refused("signature does not match the body (wrong secret, or the body was changed)")
	}
	return nil
}
