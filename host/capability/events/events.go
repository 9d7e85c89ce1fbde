// Package events implements atelier:host/events: a guest publishes JSON events under a topic
// to the clients subscribed to it. Payloads are validated (JSON, size) before they reach the
// Publisher bound to the instance (runtime.InstanceConfig.Bind[events.Grant]), or the default
// Publisher given to New.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/events@0.1.0"
	Grant     = "atelier:host/events"
)

// Event is one published event.
type Event struct {
	// Source is the publishing instance's name (runtime.InstanceConfig.Name).
	Source  string
	Topic   string
	Payload json.RawMessage
}

// Publisher delivers events; the kernel implements it, Bus is the in-memory implementation.
type Publisher interface {
	Publish(ctx context.Context, ev Event) error
}

// Limits bound events. Zero fields take the defaults below.
type Limits struct {
	// MaxTopic is the longest topic in bytes (default 256).
	MaxTopic int
	// MaxPayload is the largest payload in bytes (default 64 KiB).
	MaxPayload int
}

// New returns the host interface; def receives the events of instances without a binding.
func New(def Publisher, lim Limits) runtime.HostInterface {
	if lim.MaxTopic <= 0 {
		lim.MaxTopic = 256
	}
	if lim.MaxPayload <= 0 {
		lim.MaxPayload = 64 << 10
	}
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{{
			Name: "publish",
			Func: func(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
				topic, payload := args[0].(string), args[1].(string)
				switch {
				case topic == "" || len(topic) > lim.MaxTopic:
					return nil, runtime.Fail(fmt.Sprintf("topic must be 1 to %d bytes", lim.MaxTopic))
				case len(payload) > lim.MaxPayload:
					return nil, runtime.Fail(fmt.Sprintf("payload of %d bytes exceeds %d", len(payload), lim.MaxPayload))
				case !json.Valid([]byte(payload)):
					return nil, runtime.Fail("payload is not valid JSON")
				}
				ev := Event{Source: call.InstanceName(), Topic: topic, Payload: json.RawMessage(payload)}
				if err := call.State().(Publisher).Publish(ctx, ev); err != nil {
					return nil, runtime.Fail(err.Error())
				}
				return nil, nil
			},
		}},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			if info.Bind == nil {
				return def, nil
			}
			p, ok := info.Bind.(Publisher)
			if !ok {
				return nil, fmt.Errorf("events: binding is %T, want an events.Publisher", info.Bind)
			}
			return p, nil
		},
	}
}

// Bus is an in-memory Publisher that hands every event to its subscribers, synchronously.
type Bus struct {
	mu   sync.Mutex // guards subs and next
	subs map[int]func(Event)
	next int
}

// NewBus returns a bus without subscribers.
func NewBus() *Bus { return &Bus{subs: make(map[int]func(Event))} }

// Subscribe registers fn (which must not block) and returns the function that removes it.
func (b *Bus) Subscribe(fn func(Event)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

// Publish implements Publisher.
func (b *Bus) Publish(_ context.Context, ev Event) error {
	b.mu.Lock()
	subs := make([]func(Event), 0, len(b.subs))
	for _, fn := range b.subs {
		subs = append(subs, fn)
	}
	b.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
	return nil
}
