package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	extism "github.com/extism/go-sdk"

	"atelier/host/capability/approvals"
	"atelier/host/capability/kv"
	"atelier/host/capability/outboundhttp"
	"atelier/host/runtime"
)

// Namespace is the import module of Atelier's host functions.
const Namespace = "extism:host/user"

// hostError is the error case of a host function's answer.
type hostError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *hostError) Error() string { return e.Kind + ": " + e.Message }

// header and response are the JSON of fetch.
type header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type response struct {
	Status  int      `json:"status"`
	Headers []header `json:"headers"`
	Body    []byte   `json:"body"`
}

// answer is a host function's JSON answer.
type answer struct {
	OK    any        `json:"ok"`
	Error *hostError `json:"error,omitempty"`
}

// hostFunctions are the functions of Namespace. Each serves the Guest whose call is running
// (from the call's context).
var hostFunctions = []extism.HostFunction{
	hostFunc("fetch", func(ctx context.Context, g *Guest, r struct {
		Method, URL string
		Headers     []header
		Body        []byte
	}) (any, error) {
		req := outboundhttp.Request{Method: r.Method, URL: r.URL, Body: r.Body}
		for _, h := range r.Headers {
			req.Headers = append(req.Headers, outboundhttp.Header(h))
		}
		resp, err := g.e.client.Do(ctx, g.policy, req)
		if err != nil {
			e := err.(*outboundhttp.Error)
			return nil, &hostError{Kind: e.Kind, Message: e.Message}
		}
		out := response{Status: resp.Status, Headers: make([]header, len(resp.Headers)), Body: resp.Body}
		for i, h := range resp.Headers {
			out.Headers[i] = header(h)
		}
		return out, nil
	}),
	hostFunc("authorize_observation", func(ctx context.Context, g *Guest, o approvals.Observation) (any, error) {
		if err := o.Check(); err != nil {
			return nil, refused(err)
		}
		if g.cfg.Sink == nil {
			return nil, refused(errNoQueue)
		}
		return nil, refused(g.cfg.Sink.AuthorizeObservation(ctx, o))
	}),
	hostFunc("submit_action", func(ctx context.Context, g *Guest, a approvals.Action) (any, error) {
		if err := a.Check(); err != nil {
			return nil, refused(err)
		}
		if g.cfg.Sink == nil {
			return nil, refused(errNoQueue)
		}
		id, err := g.cfg.Sink.SubmitAction(ctx, a)
		return id, refused(err)
	}),
	hostFunc("kv_get", func(ctx context.Context, g *Guest, r struct{ Key string }) (any, error) {
		if err := g.e.kv.CheckKey(r.Key); err != nil {
			return nil, &hostError{Kind: "invalid-key", Message: err.Error()}
		}
		v, ok, err := g.store.Get(ctx, r.Key)
		if err != nil || !ok {
			return nil, storeError(err)
		}
		return map[string][]byte{"value": v}, nil
	}),
	hostFunc("kv_set", func(ctx context.Context, g *Guest, r struct {
		Key   string
		Value []byte
	}) (any, error) {
		if err := g.e.kv.CheckKey(r.Key); err != nil {
			return nil, &hostError{Kind: "invalid-key", Message: err.Error()}
		}
		if err := g.e.kv.CheckValue(r.Value); err != nil {
			return nil, &hostError{Kind: "quota-exceeded", Message: err.Error()}
		}
		return nil, storeError(g.store.Set(ctx, r.Key, r.Value))
	}),
	hostFunc("kv_delete", func(ctx context.Context, g *Guest, r struct{ Key string }) (any, error) {
		if err := g.e.kv.CheckKey(r.Key); err != nil {
			return nil, &hostError{Kind: "invalid-key", Message: err.Error()}
		}
		return nil, storeError(g.store.Delete(ctx, r.Key))
	}),
	hostFunc("log", func(_ context.Context, g *Guest, r struct{ Level, Message string }) (any, error) {
		if !slices.Contains([]string{"debug", "info", "warn", "error"}, r.Level) {
			return nil, &hostError{Kind: "invalid", Message: fmt.Sprintf("level %q is not debug, info, warn or error", r.Level)}
		}
		g.line("log", r.Level, r.Message)
		return nil, nil
	}),
}

var errNoQueue = errors.New("this instance has no approval queue")

// refused turns an approvals error into the answer's error.
func refused(err error) error {
	if err == nil {
		return nil
	}
	return &hostError{Kind: "refused", Message: err.Error()}
}

// storeError turns a kv.Store failure into the answer's error, as the kv interface does.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrQuota):
		return &hostError{Kind: "quota-exceeded", Message: err.Error()}
	}
	return &hostError{Kind: "io", Message: err.Error()}
}

// hostFunc defines host function name: it reads the JSON request from the block the plugin
// passed, decodes it into In, calls f for the calling Guest and returns a block holding the
// JSON answer. Only a failure to write the answer, the end of the call's context while f ran
// (the call then fails with runtime.ErrDeadline, rather than the plugin going on past its
// deadline with f's error), or a call without a Guest traps the plugin.
func hostFunc[In any](name string, f func(context.Context, *Guest, In) (any, error)) extism.HostFunction {
	h := extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		g, ok := ctx.Value(guestKey{}).(*Guest)
		if !ok {
			panic(fmt.Errorf("%s: called outside a gatekeeper call", name))
		}
		var a answer
		req, err := p.ReadBytes(stack[0])
		var in In
		if err == nil {
			err = json.Unmarshal(req, &in)
		}
		if err != nil {
			a.Error = &hostError{Kind: "invalid", Message: fmt.Sprintf("%s: the request is not the expected JSON: %v", name, err)}
		} else {
			a.OK, err = f(ctx, g, in)
			if ended(ctx) { // the call's deadline passed meanwhile: the call ends here
				g.cutShort = true
				panic(fmt.Errorf("%s: %w", name, ctx.Err()))
			}
			var he *hostError
			switch {
			case errors.As(err, &he):
				a.OK, a.Error = nil, he
			case err != nil:
				a.OK, a.Error = nil, &hostError{Kind: "failed", Message: err.Error()}
			}
		}
		out, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Errorf("%s: encode the answer: %w", name, err))
		}
		if stack[0], err = p.WriteBytes(out); err != nil {
			panic(fmt.Errorf("%s: write the answer: %w", name, err))
		}
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	h.SetNamespace(Namespace)
	return h
}

// ended reports whether ctx is done or its deadline has passed. The second test matters: an
// egress socket given the same deadline can time out a moment before ctx's own timer marks it
// done, and that call must still end as past its deadline, not as the host function's failure.
func ended(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

// line sends one console line (or several, when text is longer than runtime.MaxConsoleLine).
func (g *Guest) line(stream, level, text string) {
	if g.cfg.Console == nil {
		return
	}
	for {
		n := min(len(text), runtime.MaxConsoleLine)
		g.cfg.Console(runtime.ConsoleLine{Instance: g.cfg.Name, Stream: stream, Level: level, Text: text[:n]})
		if text = text[n:]; text == "" {
			return
		}
	}
}

// console returns a writer that sends what the plugin writes to stream as console lines.
func (g *Guest) console(stream string) io.Writer {
	return &lineWriter{emit: func(text string) { g.line(stream, "", text) }}
}

// lineWriter splits a stream into lines; a partial line waits for its newline.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= runtime.MaxConsoleLine {
				w.emit(string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// logLevel names an Extism log level as console lines do.
func logLevel(l extism.LogLevel) string {
	switch l {
	case extism.LogLevelTrace, extism.LogLevelDebug:
		return "debug"
	case extism.LogLevelInfo:
		return "info"
	case extism.LogLevelWarn:
		return "warn"
	}
	return "error"
}
