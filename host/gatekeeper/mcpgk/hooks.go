package mcpgk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/capability/approvals"
	"atelier/host/gatekeeper"
)

// HookResourceUpdated is the MCP gatekeeper's notify hook event: a resource of the server
// changed (notifications/resources/updated). Its params are {"uri": URI, "contents": bool};
// each event's payload is {"uri": URI} (the resource that changed: the one subscribed to, or
// one under it), with "contents" (the resource as readResource returns it, recorded as an
// observation) when the params asked for them, or "error" when reading them failed.
const HookResourceUpdated = "resource-updated"

// hookSpecs are the hook events of the MCP gatekeeper's manifest.
var hookSpecs = []gatekeeper.HookSpec{{
	Event: HookResourceUpdated, Title: "A resource of the MCP server changed", Source: gatekeeper.HookNotify,
	Description: `Params {"uri": "…", "contents": true|false}: the hook subscribes to the resource (resources/subscribe) and fires with {"uri", "contents"?} on each notifications/resources/updated.`,
}}

// Bounds of a watch.
const (
	// maxWatchURI bounds the uri a hook subscribes to.
	maxWatchURI = 2048
	// watchQueue bounds the updates waiting for the gadget; more are dropped (an update says
	// only that the resource changed: the next one says it again).
	watchQueue = 16
	// watchKeepAlive is how often a watch connection pings its server, to notice a server
	// that vanished without closing the connection.
	watchKeepAlive = 30 * time.Second
	// watchRetryMax bounds the wait before connecting again after a watch connection ended.
	watchRetryMax = time.Minute
)

// watchParams are a resource-updated hook's params.
type watchParams struct {
	URI      string `json:"uri"`
	Contents bool   `json:"contents"`
}

// watch is one running hook watch: a connection of its own that subscribed to a resource,
// connected again (after a growing wait) when it ends, until stop.
type watch struct {
	g      *guest
	ctx    context.Context // the watch's: done at stop (it keeps the caller's values)
	stop   context.CancelFunc
	params watchParams
	fire   func([]byte)
	queue  chan string
	done   chan struct{} // closed once the watch's goroutines ended
	ran    chan struct{} // closed once run ended (the subscription is over)
	firing atomic.Bool   // deliver is calling fire

	mu sync.Mutex
	cn *conn // the live connection (nil between connections)
}

// CheckHook implements gatekeeper.HookWatcher: it refuses a hook whose event is not
// HookResourceUpdated or whose params name no resource.
func (g *guest) CheckHook(h gatekeeper.Hook) error {
	_, err := hookParams(h)
	return err
}

// hookParams reads the params of a HookResourceUpdated hook.
func hookParams(h gatekeeper.Hook) (watchParams, error) {
	if h.Event != HookResourceUpdated {
		return watchParams{}, fmt.Errorf("%w: the MCP gatekeeper has no hook event %q", gatekeeper.ErrNoHooks, h.Event)
	}
	var p watchParams
	if err := json.Unmarshal([]byte(h.Params), &p); err != nil || p.URI == "" || len(p.URI) > maxWatchURI {
		return watchParams{}, fmt.Errorf(`hook %s: want params {"uri": "…"} naming a resource of the server (at most %d bytes), e.g. from listResources`, HookResourceUpdated, maxWatchURI)
	}
	return p, nil
}

// WatchHook implements gatekeeper.HookWatcher for HookResourceUpdated: it connects to the
// server on a connection of the hook's own, subscribes to params.uri and calls fire with each
// update's payload until stop (which unsubscribes and closes the connection) is called, ctx
// ends, the instance closes or the account is disconnected. The first connection is made
// before it returns, so that a server that cannot be reached or offers no subscriptions
// refuses the hook; later ones are made again whenever the connection ends.
func (g *guest) WatchHook(ctx context.Context, _ uint64, h gatekeeper.Hook, fire func([]byte)) (func(), error) {
	p, err := hookParams(h)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, errors.New("the MCP gatekeeper instance is closed")
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &watch{g: g, ctx: wctx, stop: cancel, params: p, fire: fire, queue: make(chan string, watchQueue), done: make(chan struct{}), ran: make(chan struct{})}
	cn, err := w.connect(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if !g.c.watches.add(g, w) {
		cancel()
		w.unsubscribe(cn)
		return nil, errors.New("the MCP gatekeeper instance or its account is closed")
	}
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer close(w.ran); w.run(cn) }()
	go func() { defer wg.Done(); w.deliver() }()
	go func() { wg.Wait(); g.c.watches.remove(g, w); close(w.done) }()
	return w.halt, nil
}

// halt stops the watch and returns once it unsubscribed and closed its connection, and no
// fire is under way, except when it is called during a fire (from fire itself, say): then
// that fire may still be running, and none starts after it.
func (w *watch) halt() {
	w.stop()
	<-w.ran
	if !w.firing.Load() {
		<-w.done
	}
}

// connect connects to the server with an updates handler, checks that it offers resource
// subscriptions and subscribes to the watch's resource.
func (w *watch) connect(ctx context.Context) (*conn, error) {
	g := w.g
	opts := &gomcp.ClientOptions{
		KeepAlive: watchKeepAlive,
		ResourceUpdatedHandler: func(_ context.Context, req *gomcp.ResourceUpdatedNotificationRequest) {
			uri := w.params.URI
			if req.Params != nil && req.Params.URI != "" {
				uri = req.Params.URI
			}
			select {
			case w.queue <- uri:
			default: // the gadget is behind: this update is dropped
			}
		},
	}
	cn, err := g.dial(ctx, opts, true)
	if err != nil {
		return nil, err
	}
	ir := cn.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		cn.close()
		return nil, fmt.Errorf("MCP server %s does not offer resource subscriptions, so hook %s cannot watch %.200q", g.resource, HookResourceUpdated, w.params.URI)
	}
	sctx, cancel := context.WithTimeout(ctx, g.c.cfg.CallTimeout)
	defer cancel()
	sctx, slot := withSizeSlot(sctx)
	if err := cn.cs.Subscribe(sctx, &gomcp.SubscribeParams{URI: w.params.URI}); err != nil {
		cn.close()
		if se, _ := slot.get(); se != nil {
			return nil, fmt.Errorf("MCP server %s: resources/subscribe: its answer: %w", g.resource, se)
		}
		return nil, fmt.Errorf("MCP server %s: subscribe to %.200q: %w", g.resource, w.params.URI, err)
	}
	w.mu.Lock()
	w.cn = cn
	w.mu.Unlock()
	return cn, nil
}

// run keeps the watch connected until it stops: when the connection ends it connects again,
// waiting 1 s, then twice as long each time it fails, at most watchRetryMax. At stop it
// unsubscribes and closes the connection.
func (w *watch) run(cn *conn) {
	wait := time.Second
	for {
		select {
		case <-w.ctx.Done():
			w.unsubscribe(cn)
			return
		case <-cn.done:
		}
		w.mu.Lock()
		w.cn = nil
		w.mu.Unlock()
		cn.close()
		for {
			select {
			case <-w.ctx.Done():
				return
			case <-time.After(wait):
			}
			next, err := w.connect(w.ctx)
			if err == nil {
				cn, wait = next, time.Second
				break
			}
			wait = min(2*wait, watchRetryMax)
		}
	}
}

// unsubscribe ends the subscription (best effort, bounded by a few seconds) and closes cn.
func (w *watch) unsubscribe(cn *conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 5*time.Second)
	defer cancel()
	cn.cs.Unsubscribe(ctx, &gomcp.UnsubscribeParams{URI: w.params.URI})
	cn.close()
}

// deliver fires the queued updates, one at a time, until the watch stops.
func (w *watch) deliver() {
	for {
		select {
		case <-w.ctx.Done():
			return
		case uri := <-w.queue:
			w.firing.Store(true)
			if w.ctx.Err() == nil {
				if p := w.payload(uri); p != nil && w.ctx.Err() == nil {
					w.fire(p)
				}
			}
			w.firing.Store(false)
		}
	}
}

// payload is the event of an update of uri: {"uri"} and, when the params asked, the
// resource's contents read on the watch's connection (an observation), or why they could not
// be read.
func (w *watch) payload(uri string) []byte {
	g := w.g
	ev := map[string]any{"uri": uri}
	if w.params.Contents {
		if res, err := w.read(uri); err != nil {
			ev["error"] = err.Error()
		} else {
			ev["contents"] = res
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	return []byte(g.scrub(string(b)))
}

// read reads uri on the watch's connection, bounded like readResource, and records the read.
func (w *watch) read(uri string) (json.RawMessage, error) {
	g := w.g
	w.mu.Lock()
	cn := w.cn
	w.mu.Unlock()
	if cn == nil {
		return nil, errors.New("the connection to the MCP server ended before the resource could be read")
	}
	ctx, cancel := context.WithTimeout(w.ctx, g.c.cfg.CallTimeout)
	defer cancel()
	ctx, slot := withSizeSlot(ctx)
	res, err := cn.cs.ReadResource(ctx, &gomcp.ReadResourceParams{URI: uri})
	if err != nil {
		if se, _ := slot.get(); se != nil {
			return nil, fmt.Errorf("resources/read %.200q: the MCP server's answer: %w", uri, se)
		}
		return nil, fmt.Errorf("resources/read %.200q: %w", uri, err)
	}
	out, err := g.bounded("resource-updated", res)
	if err != nil {
		return nil, err
	}
	if g.sink == nil {
		return nil, errors.New("this instance may not read (no approvals sink)")
	}
	if err := g.sink.AuthorizeObservation(ctx, approvals.Observation{Title: "Read updated resource " + clip(uri, 200),
		Description: fmt.Sprintf("Resource `%s` of MCP server %s, for hook %s.", clip(uri, 1024), g.resource, HookResourceUpdated)}); err != nil {
		return nil, err
	}
	return json.RawMessage(out), nil
}

// watches are the running hook watches by guest, so that closing a guest, its account or the
// gatekeeper stops them.
type watches struct {
	mu     sync.Mutex
	byG    map[*guest]map[*watch]bool
	closed bool
}

// add records w of g; false once the gatekeeper, g or g's account is closed.
func (ws *watches) add(g *guest, w *watch) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if ws.closed || closed || g.entry.gone.Load() {
		return false
	}
	if ws.byG == nil {
		ws.byG = map[*guest]map[*watch]bool{}
	}
	if ws.byG[g] == nil {
		ws.byG[g] = map[*watch]bool{}
	}
	ws.byG[g][w] = true
	return true
}

// remove forgets w of g.
func (ws *watches) remove(g *guest, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.byG[g], w)
	if len(ws.byG[g]) == 0 {
		delete(ws.byG, g)
	}
}

// stop stops the watches of the guests match selects (all when match is nil; then no watch
// starts any more) and waits for them to end.
func (ws *watches) stop(match func(*guest) bool) {
	ws.mu.Lock()
	if match == nil {
		ws.closed = true
	}
	var stopping []*watch
	for g, set := range ws.byG {
		if match == nil || match(g) {
			for w := range set {
				stopping = append(stopping, w)
			}
		}
	}
	ws.mu.Unlock()
	for _, w := range stopping {
		w.stop()
	}
	for _, w := range stopping {
		w.halt()
	}
}
