package kernel

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"atelier/capnweb"
	"atelier/host/store"
)

// Topics of the hub.
func eventsTopic(ws store.WorkspaceID, g store.GadgetID) string {
	return "events/" + string(ws) + "/" + string(g)
}
func gadgetsTopic(ws store.WorkspaceID) string { return "gadgets/" + string(ws) }
func consoleTopic(ws store.WorkspaceID, g store.GadgetID) string {
	if g == "" {
		return "console/" + string(ws)
	}
	return "console/" + string(ws) + "/" + string(g)
}

// subscriptionQueue is how many values may wait for one slow subscriber; more are dropped.
const subscriptionQueue = 256

// deliveryTimeout bounds one callback call; a subscriber that does not answer in time is
// dropped.
const deliveryTimeout = 30 * time.Second

// hub fans values out to subscriptions by topic. Delivery is asynchronous: publish never
// blocks, and each subscription has its own goroutine calling its callback in order.
type hub struct {
	log *slog.Logger

	mu     sync.RWMutex // guards topics and closed
	topics map[string]map[*Subscription]struct{}
	closed bool
}

func newHub(log *slog.Logger) *hub {
	return &hub{log: log, topics: map[string]map[*Subscription]struct{}{}}
}

// Subscription is a client's subscription (docs/api.md): cancel() or disposing its stub stops
// it, and so does its callback breaking or its principal losing access.
type Subscription struct {
	capnweb.Target
	h       *hub
	topic   string
	ws      store.WorkspaceID
	gadget  store.GadgetID // "" for workspace-wide topics
	cb      *capnweb.Stub
	allowed func() error
	queue   chan any
	once    sync.Once
	done    chan struct{}
	unwatch func()
}

// subscribe registers cb (which it Dups) on topic, a topic of workspace ws and (unless "")
// gadget. allowed is checked before every delivery; when it fails the subscription ends.
func (h *hub) subscribe(topic string, ws store.WorkspaceID, gadget store.GadgetID, cb *capnweb.Stub, allowed func() error) (*Subscription, error) {
	if cb == nil {
		return nil, fail(CodeInvalidArgument, "subscribe: pass a callback function")
	}
	s := &Subscription{h: h, topic: topic, ws: ws, gadget: gadget, cb: cb.Dup(), allowed: allowed, queue: make(chan any, subscriptionQueue), done: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.cb.Dispose()
		return nil, ErrClosed
	}
	if h.topics[topic] == nil {
		h.topics[topic] = map[*Subscription]struct{}{}
	}
	h.topics[topic][s] = struct{}{}
	h.mu.Unlock()
	s.unwatch = s.cb.OnBroken(func(error) { go s.Cancel() })
	go s.run()
	return s, nil
}

// watched reports whether topic has subscribers (so that a publisher may skip building values
// nobody reads).
func (h *hub) watched(topic string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.topics[topic]) > 0
}

// publish queues v for every subscriber of topic; a full queue drops v for that subscriber.
func (h *hub) publish(topic string, v any) {
	h.mu.RLock()
	subs := make([]*Subscription, 0, len(h.topics[topic]))
	for s := range h.topics[topic] {
		subs = append(subs, s)
	}
	h.mu.RUnlock()
	for _, s := range subs {
		select {
		case s.queue <- v:
		default:
			h.log.Warn("subscriber too slow; value dropped", "topic", topic)
		}
	}
}

// close ends every subscription.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancelWhere(func(*Subscription) bool { return true })
}

// cancelGone ends the subscriptions of a deleted workspace (gadget ""), or of a deleted gadget.
func (h *hub) cancelGone(ws store.WorkspaceID, gadget store.GadgetID) {
	h.cancelWhere(func(s *Subscription) bool { return s.ws == ws && (gadget == "" || s.gadget == gadget) })
}

func (h *hub) cancelWhere(match func(*Subscription) bool) {
	h.mu.Lock()
	var gone []*Subscription
	for _, subs := range h.topics {
		for s := range subs {
			if match(s) {
				gone = append(gone, s)
			}
		}
	}
	h.mu.Unlock()
	for _, s := range gone {
		s.Cancel()
	}
}

func (s *Subscription) run() {
	for {
		select {
		case <-s.done:
			return
		case v := <-s.queue:
			if err := s.allowed(); err != nil {
				s.Cancel()
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
			p := s.cb.CallFunc(ctx, v)
			_, err := p.Await(ctx)
			p.Dispose()
			cancel()
			if err != nil && ctx.Err() != nil {
				s.Cancel()
				return
			}
		}
	}
}

// Cancel stops the subscription. Idempotent.
func (s *Subscription) Cancel() {
	s.once.Do(func() {
		s.h.mu.Lock()
		delete(s.h.topics[s.topic], s)
		if len(s.h.topics[s.topic]) == 0 {
			delete(s.h.topics, s.topic)
		}
		s.h.mu.Unlock()
		close(s.done)
		if s.unwatch != nil {
			s.unwatch()
		}
		s.cb.Dispose()
	})
}

// Dispose implements capnweb.Disposer: the client dropped the subscription.
func (s *Subscription) Dispose() { go s.Cancel() }

// count returns the number of live subscriptions.
func (h *hub) count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, subs := range h.topics {
		n += len(subs)
	}
	return n
}
