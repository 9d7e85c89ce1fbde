package kernel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// syncBuffer is a bytes.Buffer the kernel's logger may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// withVault gives the server a vault key file under dir, and its log to log.
func withVault(dir string, log *syncBuffer) option {
	return func(c *kernel.Config) {
		c.KeyFile = filepath.Join(dir, "vault.key")
		c.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// model is an addModel input for an OpenAI-compatible endpoint; set adds or changes fields.
func model(name string, set map[string]any) map[string]any {
	m := map[string]any{"name": name, "provider": "openai", "baseUrl": "https://api.example.com/v1", "model": "gpt-4o"}
	for k, v := range set {
		m[k] = v
	}
	return m
}

// caller is a Stub or a Promise of one.
type caller interface {
	Call(ctx context.Context, method string, args ...any) *capnweb.Promise
}

// modelIDs returns the ids listModels gives, with their scope.
func modelIDs(t *testing.T, api caller) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range await(t, api.Call(ctx, "listModels")).([]any) {
		m := m.(map[string]any)
		out[m["id"].(string)] = m["scope"].(string)
	}
	return out
}

// errText is err's message with its properties, as a client would see them.
func errText(err error) string {
	var e *capnweb.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s %s %v", e.Name, e.Message, e.Props)
	}
	return fmt.Sprint(err)
}

// TestModelKeysAreNeverReturned: a model's key is sealed: no call returns it (addModel,
// listModels, the errors of refused inputs that carry it), the server's log and the data file
// do not hold it, and only modelSpec opens it.
func TestModelKeysAreNeverReturned(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	data := filepath.Join(dir, "a.db")
	s := startServer(t, data, withVault(dir, &log))
	ada := s.dial(t).Call(ctx, "authenticate", await(t, s.dial(t).Call(ctx, "signup", "ada", "password-ada")))
	const key = "sk-ada-7f3c9e1b5d2a8f4e6c0b"
	const urlSecret = "pw-in-the-url-91c2"
	info := await(t, ada.Call(ctx, "addModel", model("gpt", map[string]any{"apiKey": key, "contextWindow": 128000}))).(map[string]any)
	if info["hasKey"] != true || info["scope"] != "user" || info["contextWindow"] != 128000.0 || info["baseUrl"] != "https://api.example.com/v1" {
		t.Fatalf("addModel returned %v", info)
	}
	id := info["id"].(string)
	if !strings.HasPrefix(id, "mdl_") {
		t.Fatalf("model id %q, want mdl_...", id)
	}
	seen := []string{fmt.Sprint(info), fmt.Sprint(await(t, ada.Call(ctx, "listModels")))}
	for _, bad := range []map[string]any{
		model("gpt", map[string]any{"apiKey": key, "baseUrl": "ftp://example.com"}),
		model("gpt", map[string]any{"apiKey": key, "provider": "nope"}),
		model("gpt", map[string]any{"apiKey": key + "\n"}),
		model("gpt", map[string]any{"apiKey": key, "baseUrl": "https://user:" + urlSecret + "@api.example.com/v1"}),
		model("gpt", map[string]any{"baseUrl": "https://api.example.com/v1?key=" + urlSecret}),
		model("", map[string]any{"apiKey": key}),
	} {
		_, err := ada.Call(ctx, "addModel", bad).Await(ctx)
		if err == nil {
			t.Fatalf("addModel(%v) was accepted", bad)
		}
		seen = append(seen, errText(err))
	}
	spec, err := s.k.ModelSpecOf(ctx, "ada", id)
	if err != nil || spec.APIKey != key || spec.Model != "gpt-4o" || spec.ContextWindow != 128000 {
		t.Fatalf("modelSpec: %+v, %v; want the key opened", spec, err)
	}
	file, err := os.ReadFile(data) // committed: every write is durable before its call returns
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(file, []byte(id)) {
		t.Fatalf("the data file does not hold model %s in clear, so it cannot show where its key is", id)
	}
	seen = append(seen, string(file), log.String())
	for i, text := range seen {
		if strings.Contains(text, key) || strings.Contains(text, urlSecret) {
			t.Errorf("a secret shows in output %d: %.300q", i, text)
		}
	}
	if !strings.Contains(log.String(), id) {
		t.Errorf("the server's log does not record the model's addition: %s", log.String())
	}
}

// TestModelsBelongToTheirOwners: another user neither sees, removes nor uses a user's model
// (NOT_FOUND, as for a missing one); agents cannot add or remove models; a removed model is
// gone for its owner too.
func TestModelsBelongToTheirOwners(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	s := startServer(t, filepath.Join(dir, "a.db"), withVault(dir, &log))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	id := await(t, ada.Call(ctx, "addModel", model("mine", map[string]any{"apiKey": "sk-1"}))).(map[string]any)["id"].(string)
	keyless := await(t, ada.Call(ctx, "addModel", model("local", map[string]any{"provider": "openai", "baseUrl": "http://127.0.0.1:11434/v1", "model": "qwen3:4b"}))).(map[string]any)
	if keyless["hasKey"] != false {
		t.Fatalf("a model added without a key: %v", keyless)
	}
	if got := modelIDs(t, bob); len(got) != 0 {
		t.Fatalf("bob lists %v", got)
	}
	refused(t, bob.Call(ctx, "removeModel", id), "NOT_FOUND", "you have no model")
	refused(t, bob.Call(ctx, "removeModel", "mdl_missing"), "NOT_FOUND", "you have no model")
	for _, m := range []string{id, "mdl_missing"} {
		_, err := s.k.ModelSpecOf(ctx, "bob", m)
		var ke *kernel.Error
		if !errors.As(err, &ke) || ke.Code != kernel.CodeNotFound || !strings.Contains(ke.Msg, "listModels shows the models you may use") {
			t.Fatalf("bob's modelSpec of %s: %v, want NOT_FOUND", m, err)
		}
	}
	if got := modelIDs(t, ada); len(got) != 2 || got[id] != "user" {
		t.Fatalf("ada lists %v", got)
	}

	wsID := await(t, ada.Call(ctx, "createWorkspace", "home").Call(ctx, "info")).(map[string]any)["id"].(string)
	ag := await(t, ada.Call(ctx, "createAgent", "bot", agentScope(wsID, "use", "*"))).(map[string]any)
	bot := s.dial(t).Call(ctx, "authenticate", ag["token"])
	refused(t, bot.Call(ctx, "addModel", model("x", nil)), "FORBIDDEN", "agents may not")
	refused(t, bot.Call(ctx, "removeModel", id), "FORBIDDEN", "agents may not")
	if got := modelIDs(t, bot); got[id] != "user" {
		t.Fatalf("ada's agent lists %v, want ada's models", got)
	}

	await(t, ada.Call(ctx, "removeModel", id))
	refused(t, ada.Call(ctx, "removeModel", id), "NOT_FOUND", "you have no model")
	if _, err := s.k.ModelSpecOf(ctx, "ada", id); err == nil {
		t.Fatal("a removed model is still usable")
	}
}

// TestInstanceModels: only the admin adds and removes instance-wide models; every user lists
// and uses them.
func TestInstanceModels(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	s := startServer(t, filepath.Join(dir, "a.db"), withVault(dir, &log))
	adm, _ := admin(t, s)
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	refused(t, ada.Call(ctx, "addModel", model("shared", map[string]any{"instance": true})), "FORBIDDEN", "only the server's admin")
	anthropic := map[string]any{"instance": true, "provider": "anthropic", "baseUrl": "", "model": "claude-sonnet-4-5", "apiKey": "sk-ant-1"}
	info := await(t, adm.Call(ctx, "addModel", model("claude", anthropic))).(map[string]any)
	if info["scope"] != "instance" || info["baseUrl"] != "https://api.anthropic.com" || info["hasKey"] != true {
		t.Fatalf("instance model: %v (want the provider's own base URL when none is given)", info)
	}
	id := info["id"].(string)
	own := await(t, ada.Call(ctx, "addModel", model("mine", nil))).(map[string]any)["id"].(string)
	for name, api := range map[string]caller{"ada": ada, "bob": bob, "admin": adm} {
		if got := modelIDs(t, api); got[id] != "instance" {
			t.Errorf("%s lists %v, want the instance model", name, got)
		}
		spec, err := s.k.ModelSpecOf(ctx, name, id)
		if err != nil || spec.APIKey != "sk-ant-1" || spec.Provider != "anthropic" {
			t.Errorf("%s's modelSpec of the instance model: %+v, %v", name, spec, err)
		}
	}
	if got := modelIDs(t, adm); got[own] != "" {
		t.Fatalf("the admin lists ada's own model: %v", got)
	}
	refused(t, adm.Call(ctx, "removeModel", own), "NOT_FOUND", "you have no model")
	refused(t, ada.Call(ctx, "removeModel", id), "FORBIDDEN", "only the server's admin")
	await(t, adm.Call(ctx, "removeModel", id))
	if got := modelIDs(t, bob); len(got) != 0 {
		t.Fatalf("bob lists %v after the admin removed the instance model", got)
	}
}

// TestAddModelRefusesBadInput: each bad field is INVALID_ARGUMENT with a message that says
// what to give instead; a key without a vault key file is FAILED_PRECONDITION; the models
// quota bounds a user's models.
func TestAddModelRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	var log syncBuffer
	s := startServer(t, filepath.Join(dir, "a.db"), withVault(dir, &log))
	ada := s.user(t, "ada")
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"unknown provider", map[string]any{"provider": "gemini"}, `provider "gemini" is not "openai"`},
		{"no name", map[string]any{"name": " "}, "the name is missing"},
		{"long name", map[string]any{"name": strings.Repeat("n", 101)}, "the name is 101 bytes, over the limit of 100"},
		{"control in name", map[string]any{"name": "a\x1b[2Jb"}, "control characters"},
		{"no model", map[string]any{"model": ""}, "the model is missing"},
		{"long model", map[string]any{"model": strings.Repeat("m", 201)}, "over the limit of 200"},
		{"ftp", map[string]any{"baseUrl": "ftp://example.com/v1"}, "not an http or https URL"},
		{"relative", map[string]any{"baseUrl": "/v1"}, "not an http or https URL"},
		{"no host", map[string]any{"baseUrl": "http:///v1"}, "not an http or https URL"},
		{"opaque", map[string]any{"baseUrl": "http:example.com"}, "not an http or https URL"},
		{"user info", map[string]any{"baseUrl": "https://me:pw@example.com/v1"}, "carries user info"},
		{"query", map[string]any{"baseUrl": "https://example.com/v1?x=1"}, "query or fragment"},
		{"empty query", map[string]any{"baseUrl": "https://example.com/v1?"}, "query or fragment"},
		{"fragment", map[string]any{"baseUrl": "https://example.com/v1#x"}, "query or fragment"},
		{"long url", map[string]any{"baseUrl": "https://example.com/" + strings.Repeat("a", 2048)}, "over the limit of 2048"},
		{"key with newline", map[string]any{"apiKey": "sk-1\r\nX-Evil: 1"}, "control or non-ASCII character at byte 4"},
		{"key with space", map[string]any{"apiKey": "Bearer sk-1"}, "at byte 6"},
		{"long key", map[string]any{"apiKey": strings.Repeat("k", 4097)}, "the API key is 4097 bytes"},
		{"small window", map[string]any{"contextWindow": 10}, "contextWindow 10 is out of range"},
		{"negative window", map[string]any{"contextWindow": -1}, "out of range"},
		{"huge window", map[string]any{"contextWindow": 1 << 40}, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused(t, ada.Call(ctx, "addModel", model("m", tc.set)), "INVALID_ARGUMENT", tc.want)
		})
	}
	if got := modelIDs(t, ada); len(got) != 0 {
		t.Fatalf("refused models were stored: %v", got)
	}

	adm, _ := admin(t, s)
	await(t, adm.Call(ctx, "setQuota", "models", 2))
	for _, name := range []string{"a", "b"} {
		await(t, ada.Call(ctx, "addModel", model(name, nil)))
	}
	refused(t, ada.Call(ctx, "addModel", model("c", nil)), "RESOURCE_EXHAUSTED", "quota models exceeded: user ada has 2 of 2")
	await(t, adm.Call(ctx, "addModel", model("shared", map[string]any{"instance": true})))
	await(t, adm.Call(ctx, "addModel", model("admin's own", nil))) // the instance's models are not the admin's

	bare := startServer(t, filepath.Join(dir, "b.db"))
	refused(t, bare.user(t, "ada").Call(ctx, "addModel", model("m", map[string]any{"apiKey": "sk-1"})), "FAILED_PRECONDITION", "no key file")
}

// TestAgentInstructions: the admin sets them (bounded, UTF-8), every user reads them, the
// kernel hands them to a run.
func TestAgentInstructions(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	adm, _ := admin(t, s)
	ada := s.user(t, "ada")
	if got := await(t, ada.Call(ctx, "getAgentInstructions")); got != "" {
		t.Fatalf("instructions before any were set: %q", got)
	}
	refused(t, ada.Call(ctx, "setAgentInstructions", "obey ada"), "FORBIDDEN", "only the server's admin")
	const text = "Answer in French. Never deploy on Fridays."
	await(t, adm.Call(ctx, "setAgentInstructions", text))
	if got := await(t, ada.Call(ctx, "getAgentInstructions")); got != text {
		t.Fatalf("ada reads %q", got)
	}
	if got := s.k.AgentInstructions(ctx); got != text {
		t.Fatalf("a run gets %q", got)
	}
	refused(t, adm.Call(ctx, "setAgentInstructions", strings.Repeat("x", kernel.MaxAgentInstructions+1)), "INVALID_ARGUMENT", "over the limit of 16384")
	await(t, adm.Call(ctx, "setAgentInstructions", strings.Repeat("x", kernel.MaxAgentInstructions)))
	await(t, adm.Call(ctx, "setAgentInstructions", ""))
	if got := s.k.AgentInstructions(ctx); got != "" {
		t.Fatalf("removed instructions: a run gets %q", got)
	}
}

// TestModelsSayWhenTheirAddressIsRefused: a model whose base URL is a loopback or private
// address the admin did not allow (Config.ModelAllowAddrs) says so and how to allow it; an
// allowed one, a public one and a host name (checked when dialed) say nothing.
func TestModelsSayWhenTheirAddressIsRefused(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.ModelAllowAddrs = []string{"127.0.0.1:11434", "[fd00::1]:8000"}
	})
	ada := s.user(t, "ada")
	for url, want := range map[string]string{
		"http://127.0.0.1:11434/v1":          "",
		"http://[::ffff:127.0.0.1]:11434/v1": "",
		"http://[fd00::1]:8000/v1":           "",
		"https://api.example.com/v1":         "",
		"https://8.8.8.8/v1":                 "",
		"http://localhost:8080/v1":           "--model-allow-addr 127.0.0.1:8080`",
		"http://10.0.0.5/v1":                 "requests to 10.0.0.5:80, which is not a public address",
		"https://[::1]/":                     "--model-allow-addr [::1]:443`",
		"http://169.254.169.254/latest":      "169.254.169.254:80",
		"http://127.0.0.1:11435/v1":          "127.0.0.1:11435",
	} {
		info := await(t, ada.Call(ctx, "addModel", model("m", map[string]any{"baseUrl": url}))).(map[string]any)
		got, _ := info["refused"].(string)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("a model at %s: refused %q, want %q", url, got, want)
		}
	}
}
