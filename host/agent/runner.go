package agent

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// Defaults of Config.
const (
	// DefaultMaxTurns bounds the model calls of one run.
	DefaultMaxTurns = 30
	// DefaultMaxToolOutput bounds the bytes of one tool output sent back to the model (and
	// stored and shown); past it the output is cut with a note saying so.
	DefaultMaxToolOutput = 16 << 10
	// DefaultMaxToolCalls bounds the tool calls run from one reply; the rest are not run and
	// the model is told so.
	DefaultMaxToolCalls = 16
	// DefaultMaxToolArgs bounds the JSON arguments of one tool call (the kernel stores at most
	// as much); a longer call is not run and the model is told to write in parts.
	DefaultMaxToolArgs = 64 << 10
	// DefaultMaxReply bounds the text and tool arguments of one reply, in bytes.
	DefaultMaxReply = 1 << 20
	// DefaultModelTimeout bounds one model call, stream included.
	DefaultModelTimeout = 5 * time.Minute
	// DefaultContextWindow is the window of a model that does not say (ModelSpec.ContextWindow 0).
	DefaultContextWindow = 32768
	// maxSameFailures ends a run when the same call (tool and arguments) failed this many
	// times in a row: the model is stuck in a loop.
	maxSameFailures = 3
)

// Config configures a Runner. Zero fields take the defaults above.
type Config struct {
	// Clients makes the client that calls a chat's model (default: provider.New for the
	// model's provider, base URL, model name and key, sending through HTTP).
	Clients func(kernel.ModelSpec) (provider.Client, error)
	// HTTP sends the default Clients' requests (default: provider.NewHTTPClient with no
	// allowed addresses: public endpoints only). The server passes one built with the admin's
	// allowed model addresses.
	HTTP *http.Client
	// MaxTurns bounds the model calls of one run (default DefaultMaxTurns).
	MaxTurns int
	// MaxToolOutput bounds the bytes of a tool's output (default DefaultMaxToolOutput).
	MaxToolOutput int
	// MaxToolCalls bounds the tool calls run from one reply (default DefaultMaxToolCalls).
	MaxToolCalls int
	// MaxToolArgs bounds the arguments of one tool call (default DefaultMaxToolArgs).
	MaxToolArgs int
	// MaxReply bounds the bytes of one reply (default DefaultMaxReply).
	MaxReply int
	// ModelTimeout bounds one model call (default DefaultModelTimeout).
	ModelTimeout time.Duration
}

// Runner runs chats' agents; it implements kernel.AgentRunner and is safe for concurrent
// runs (each Run keeps its state to itself).
type Runner struct {
	cfg Config
}

var _ kernel.AgentRunner = (*Runner)(nil)

// New returns a Runner for cfg, with the defaults filled in.
func New(cfg Config) *Runner {
	orDefault(&cfg.MaxTurns, DefaultMaxTurns)
	orDefault(&cfg.MaxToolOutput, DefaultMaxToolOutput)
	orDefault(&cfg.MaxToolCalls, DefaultMaxToolCalls)
	orDefault(&cfg.MaxToolArgs, DefaultMaxToolArgs)
	orDefault(&cfg.MaxReply, DefaultMaxReply)
	orDefault(&cfg.ModelTimeout, DefaultModelTimeout)
	if cfg.Clients == nil {
		cfg.Clients = ProviderClients(cfg.HTTP)
	}
	return &Runner{cfg: cfg}
}

// ProviderClients returns the Clients that call each model over its provider's wire format
// through h (nil: the provider package's default, public endpoints only).
func ProviderClients(h *http.Client) func(kernel.ModelSpec) (provider.Client, error) {
	return func(m kernel.ModelSpec) (provider.Client, error) {
		return provider.New(provider.Config{Kind: m.Provider, BaseURL: m.BaseURL, Model: m.Model, APIKey: m.APIKey, HTTP: h})
	}
}

func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Run answers the chat of run until the model ends its turn or a tool needs a person (it
// returns nil), ctx is cancelled (stopAgent: an error wrapping the cause), MaxTurns is reached
// (an error that is kernel.ErrTurnLimit), or something fails: the model's client, the model's
// reply (broken stream, invalid tool JSON, a reply too large, a stall), summarising, or the
// model repeating a failing call. The kernel stores the error's text as the chat's notice and
// ends the run with "error" and "done" events. Whatever was stored stays, and text streamed
// before a failure or a stop is stored too.
func (r *Runner) Run(ctx context.Context, run kernel.ChatRun) error {
	l := &loop{cfg: r.cfg, run: run, chat: run.Chat().ID, spec: run.Model()}
	if l.spec.ContextWindow <= 0 {
		l.spec.ContextWindow = DefaultContextWindow
	}
	client, err := r.cfg.Clients(l.spec)
	if err != nil {
		return fmt.Errorf("cannot use model %q: %v; check the model's settings", l.spec.Name, err)
	}
	l.client = client
	wc, err := run.Context(ctx)
	if err != nil {
		return end(ctx, fmt.Errorf("read the workspace for the prompt: %w", err))
	}
	l.system = systemPrompt(wc)
	return l.loop(ctx)
}
