package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxReply bounds the streamed bytes of one reply.
	DefaultMaxReply = 4 << 20
	// DefaultIdleTimeout ends a stream that sends nothing for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxTokens bounds a reply's tokens when the Request does not.
	DefaultMaxTokens = 4096
	// DefaultOpenAIBaseURL and DefaultAnthropicBaseURL are the providers' own endpoints.
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// maxToolCalls bounds the tool calls of one reply: a hostile stream cannot make the client keep
// an unbounded table of them.
const maxToolCalls = 64

// maxErrorBody bounds the bytes of an error response that are read for its message.
const maxErrorBody = 64 << 10

// Config says which model a Client calls and how. Zero fields take the defaults.
type Config struct {
	// Kind is KindOpenAI or KindAnthropic.
	Kind string
	// BaseURL is the endpoint's base: for KindOpenAI the URL that /chat/completions is under
	// (https://api.openai.com/v1, http://127.0.0.1:11434/v1); for KindAnthropic the URL that
	// /v1/messages is under (https://api.anthropic.com; a trailing /v1 is accepted). Default:
	// the provider's own.
	BaseURL string
	// Model is the provider's name of the model (required).
	Model string
	// APIKey is sent as "Authorization: Bearer" (OpenAI; omitted when empty) or "x-api-key"
	// (Anthropic). It never appears in an error.
	APIKey string
	// HTTP sends the requests (default: NewHTTPClient with no allowed addresses, so only
	// public addresses are reached). It should follow no redirects and must not bound the
	// whole exchange with a Timeout shorter than a reply takes to stream.
	HTTP *http.Client
	// MaxReply bounds the streamed bytes of one reply (default DefaultMaxReply); a longer
	// reply ends with ErrTooLarge.
	MaxReply int64
	// IdleTimeout ends with ErrStalled a call that receives nothing for this long, waiting
	// for the response included (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxTokens bounds a reply's tokens when Request.MaxTokens is 0 (default
	// DefaultMaxTokens).
	MaxTokens int
}

// New returns a Client for cfg. It fails, naming every problem, when the kind is unknown, the
// base URL is not an http(s) URL or the model is missing.
func New(cfg Config) (Client, error) {
	var w wire
	switch cfg.Kind {
	case KindOpenAI:
		w = openAIWire{}
		if cfg.BaseURL == "" {
			cfg.BaseURL = DefaultOpenAIBaseURL
		}
	case KindAnthropic:
		w = anthropicWire{}
		if cfg.BaseURL == "" {
			cfg.BaseURL = DefaultAnthropicBaseURL
		}
	}
	var problems []error
	if w == nil {
		problems = append(problems, fmt.Errorf("provider: kind %q is not %q or %q", cfg.Kind, KindOpenAI, KindAnthropic))
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		problems = append(problems, errors.New("provider: the base URL must be an http or https URL with a host and no user info (like https://api.openai.com/v1)"))
	}
	if cfg.Model == "" {
		problems = append(problems, errors.New("provider: the model name is missing (the provider's name of it, like gpt-4o or claude-sonnet-4-5)"))
	}
	if cfg.MaxReply < 0 || cfg.IdleTimeout < 0 || cfg.MaxTokens < 0 {
		problems = append(problems, errors.New("provider: MaxReply, IdleTimeout and MaxTokens must not be negative (0 takes the default)"))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if cfg.HTTP == nil {
		h, err := NewHTTPClient(EgressOptions{})
		if err != nil {
			return nil, err
		}
		cfg.HTTP = h
	}
	if cfg.MaxReply == 0 {
		cfg.MaxReply = DefaultMaxReply
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	return &client{cfg: cfg, wire: w, endpoint: w.endpoint(strings.TrimSuffix(cfg.BaseURL, "/")), key: scrubber(cfg.APIKey)}, nil
}

// wire is one provider's wire format.
type wire interface {
	// name is the provider's name in errors.
	name() string
	// endpoint returns the URL requests are posted to.
	endpoint(base string) string
	// encode returns the request body.
	encode(req Request, model string, maxTokens int) ([]byte, error)
	// header sets the provider's headers, the key among them.
	header(h http.Header, key string)
	// errorMessage returns the message of an error response body ("" when it has none).
	errorMessage(body []byte) string
	// decoder returns a decoder of one streamed reply that calls emit with its events.
	decoder(key scrubber, emit func(Event) error) decoder
}

// decoder turns a stream's events into a Reply.
type decoder interface {
	// event takes one event; done says the stream's last event came.
	event(ev sseEvent) (done bool, err error)
	// reply returns the reply so far. atEnd says the stream ended (its last event came, or the
	// connection closed); the reply is then checked whole.
	reply(atEnd bool) (Reply, error)
}

// client is a Client of one model.
type client struct {
	cfg      Config
	wire     wire
	endpoint string
	key      scrubber
}

// Stream implements Client. On an error, the Reply holds the text and tool calls that arrived
// before it.
func (c *client) Stream(ctx context.Context, req Request, onEvent func(Event) error) (Reply, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.cfg.MaxTokens
	}
	body, err := c.wire.encode(req, c.cfg.Model, maxTokens)
	if err != nil {
		return Reply{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(ErrStalled) })
	defer idle.Stop()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return Reply{}, fmt.Errorf("provider: building the request to %s: %w", c.wire.name(), err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	c.wire.header(hreq.Header, c.cfg.APIKey)
	resp, err := c.cfg.HTTP.Do(hreq)
	if err != nil {
		return Reply{}, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Reply{}, c.statusError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return Reply{}, fail(ErrMalformed, fmt.Sprintf("%s: the endpoint answered with Content-Type %q, not an event stream; check the base URL", c.wire.name(), c.key.text(resp.Header.Get("Content-Type"))))
	}

	// The idle timer measures the endpoint, not the caller: it is held while onEvent runs.
	dec := c.wire.decoder(c.key, func(e Event) error {
		idle.Stop()
		defer idle.Reset(c.cfg.IdleTimeout)
		return onEvent(e)
	})
	events := newSSEReader(&meteredBody{r: resp.Body, wire: c.wire.name(), left: c.cfg.MaxReply, max: c.cfg.MaxReply, idle: idle, timeout: c.cfg.IdleTimeout}, c.wire.name(), c.key)
	for {
		ev, err := events.next()
		if err == io.EOF {
			return dec.reply(true)
		}
		if err != nil {
			partial, _ := dec.reply(false)
			return partial, c.readError(ctx, err)
		}
		done, err := dec.event(ev)
		if err != nil {
			partial, _ := dec.reply(false)
			return partial, err
		}
		if done {
			return dec.reply(true)
		}
	}
}

// transportError explains a request that got no response.
func (c *client) transportError(ctx context.Context, err error) error {
	switch {
	case context.Cause(ctx) == ErrStalled:
		return c.stalled()
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, ErrEgress):
		var denied *egressError
		errors.As(err, &denied)
		return fail(ErrEgress, fmt.Sprintf("%s: %s", c.wire.name(), denied.Error()))
	}
	return fail(ErrTransport, fmt.Sprintf("%s: could not reach the model endpoint: %s; check the base URL and that the endpoint is up", c.wire.name(), c.key.text(err.Error())))
}

// readError explains a stream that broke off.
func (c *client) readError(ctx context.Context, err error) error {
	var perr *Error
	switch {
	case errors.As(err, &perr):
		return perr
	case context.Cause(ctx) == ErrStalled:
		return c.stalled()
	case ctx.Err() != nil:
		return context.Cause(ctx)
	}
	return fail(ErrTransport, fmt.Sprintf("%s: the stream broke off: %s", c.wire.name(), c.key.text(err.Error())))
}

// stalled is the error of a stream that sent nothing for the idle timeout.
func (c *client) stalled() error {
	return fail(ErrStalled, fmt.Sprintf("%s: the model endpoint sent nothing for %s, so the call was given up; try again, or raise the idle timeout for a slow local model", c.wire.name(), c.cfg.IdleTimeout))
}

// statusError reads a bounded part of an error response for its message.
func (c *client) statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := c.wire.errorMessage(body)
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
		msg = "redirected to " + loc + " (redirects are not followed)"
	}
	hint := "the provider refused the request"
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint = "check the model's API key"
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode/100 == 3:
		hint = "check the model's base URL and model name"
	case resp.StatusCode == http.StatusTooManyRequests:
		hint = "rate limited: try again later"
	case resp.StatusCode >= 500:
		hint = "the provider failed: try again later"
	}
	text := fmt.Sprintf("%s: the model endpoint answered HTTP %d", c.wire.name(), resp.StatusCode)
	if msg != "" {
		text += ": " + c.key.text(msg)
	}
	e := fail(ErrStatus, text+" ("+hint+")")
	e.Status = resp.StatusCode
	return e
}

// meteredBody reads a response body, failing with ErrTooLarge past max bytes, and pushes the
// idle timer back on every read that brought bytes.
type meteredBody struct {
	r         io.Reader
	wire      string
	left, max int64
	idle      *time.Timer
	timeout   time.Duration
}

func (m *meteredBody) Read(p []byte) (int, error) {
	if m.left <= 0 {
		// A reply of exactly max bytes ends here; one more byte is one too many.
		var one [1]byte
		if n, err := m.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fail(ErrTooLarge, fmt.Sprintf("%s: the reply passed %d bytes, the bound on one reply; it was cut off there (ask the model for less, or raise the bound)", m.wire, m.max))
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.r.Read(p)
	m.left -= int64(n)
	if n > 0 {
		m.idle.Reset(m.timeout)
	}
	return n, err
}
