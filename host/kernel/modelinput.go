package kernel

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"atelier/host/agent/provider"
)

// Bounds of a model's fields (addModel). They bound what one record holds: a user has at most
// the "models" quota of them, the instance at most maxInstanceModels.
const (
	maxModelName     = 100      // bytes of a model's name
	maxModelID       = 200      // bytes of the provider's name of the model
	maxModelURL      = 2048     // bytes of a base URL
	maxAPIKey        = 4 << 10  // bytes of an API key
	minContextWindow = 1024     // tokens: less would not hold the agent's system prompt
	maxContextWindow = 10 << 20 // tokens
	// maxInstanceModels bounds the instance-wide models (the admin's).
	maxInstanceModels = 64
)

// defaultBaseURL returns the provider's own endpoint, for a model added without a base URL;
// false for an unknown provider.
func defaultBaseURL(kind string) (string, bool) {
	switch kind {
	case provider.KindOpenAI:
		return "https://api.openai.com/v1", true
	case provider.KindAnthropic:
		return "https://api.anthropic.com", true
	}
	return "", false
}

// ModelInput is what addModel takes.
type ModelInput struct {
	// Name is how the user tells the model apart (e.g. "gpt-4o (work)").
	Name string `json:"name"`
	// Provider is "openai" (any OpenAI-compatible Chat Completions endpoint: OpenAI, Ollama,
	// llama.cpp's server, vLLM, LM Studio, OpenRouter) or "anthropic" (the Messages API).
	Provider string `json:"provider"`
	// BaseURL is the endpoint's base ("": the provider's own): for "openai" the URL that
	// /chat/completions is under (http://127.0.0.1:11434/v1 for Ollama), for "anthropic" the
	// URL that /v1/messages is under.
	BaseURL string `json:"baseUrl"`
	// Model is the provider's name of the model ("gpt-4o", "claude-sonnet-4-5", "qwen3:4b").
	Model string `json:"model"`
	// APIKey is sealed in the vault and never returned ("": the endpoint takes none).
	APIKey string `json:"apiKey"`
	// ContextWindow is the model's context in tokens (0: 32768).
	ContextWindow int `json:"contextWindow"`
	// Instance makes the model available to every user (the admin only).
	Instance bool `json:"instance"`
}

// check validates in and fills in the provider's base URL when it has none. No message
// repeats the API key or the base URL (which might carry a secret the check refuses).
func (in *ModelInput) check() error {
	if err := checkLabel("the name", in.Name, maxModelName); err != nil {
		return err
	}
	def, ok := defaultBaseURL(in.Provider)
	if !ok {
		return fail(CodeInvalidArgument, "add model: provider %.40q is not %q (OpenAI-compatible Chat Completions: OpenAI, Ollama, vLLM, ...) or %q (Anthropic Messages)",
			in.Provider, provider.KindOpenAI, provider.KindAnthropic)
	}
	if in.BaseURL == "" {
		in.BaseURL = def
	}
	if err := checkBaseURL(in.BaseURL); err != nil {
		return err
	}
	if err := checkLabel("the model", in.Model, maxModelID); err != nil {
		return err
	}
	if err := checkAPIKey(in.APIKey); err != nil {
		return err
	}
	if in.ContextWindow != 0 && (in.ContextWindow < minContextWindow || in.ContextWindow > maxContextWindow) {
		return fail(CodeInvalidArgument, "add model: contextWindow %d is out of range: give the model's context in tokens, %d to %d, or 0 for the default",
			in.ContextWindow, minContextWindow, maxContextWindow)
	}
	return nil
}

// checkLabel refuses an empty value, one over max bytes, and one with control characters.
func checkLabel(what, v string, max int) error {
	switch {
	case strings.TrimSpace(v) == "":
		return fail(CodeInvalidArgument, "add model: %s is missing", what)
	case len(v) > max:
		return fail(CodeInvalidArgument, "add model: %s is %d bytes, over the limit of %d", what, len(v), max)
	case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
		return fail(CodeInvalidArgument, "add model: %s has control characters or is not UTF-8", what)
	}
	return nil
}

// checkBaseURL accepts an absolute http or https URL with a host and no user info, query or
// fragment (a secret belongs in the API key, where it is sealed).
func checkBaseURL(raw string) error {
	const want = "give an absolute http or https URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
	if len(raw) > maxModelURL {
		return fail(CodeInvalidArgument, "add model: the base URL is %d bytes, over the limit of %d", len(raw), maxModelURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "":
		return fail(CodeInvalidArgument, "add model: the base URL is not an http or https URL with a host: %s", want)
	case u.User != nil:
		return fail(CodeInvalidArgument, "add model: the base URL carries user info (user:password@); put the key in apiKey, where it is sealed, and %s", want)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return fail(CodeInvalidArgument, "add model: the base URL has a query or fragment; %s", want)
	}
	return nil
}

// checkAPIKey refuses a key over maxAPIKey bytes or with characters outside printable ASCII
// (it travels in an HTTP header).
func checkAPIKey(key string) error {
	if len(key) > maxAPIKey {
		return fail(CodeInvalidArgument, "add model: the API key is %d bytes, over the limit of %d", len(key), maxAPIKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return fail(CodeInvalidArgument, "add model: the API key has a space, control or non-ASCII character at byte %d; paste the key alone", i)
		}
	}
	return nil
}
