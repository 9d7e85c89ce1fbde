//go:build wasip1

// Package hooks exports the hook plugin functions of host/gatekeeper/extism (hook_subscribe,
// hook_unsubscribe, hook_receive, hook_poll) for a Go Extism gatekeeper whose registered
// connector (atelier/sdk/go/extism/gatekeeper.Register) also implements connector.Hooks: the
// Extism twin of atelier/sdk/go/gatekeeper/hooks. Import it for its side effect and name the
// world atelier:gatekeeper/gatekeeper-with-hooks@0.1.0 in the manifest:
//
//	import _ "atelier/sdk/go/extism/gatekeeper/hooks"
package hooks

import (
	"encoding/json"
	"errors"

	"atelier/sdk/go/connector"
	"atelier/sdk/go/extism"
)

// in is the input of the hook functions: the hook's secret and the body are base64 in JSON.
type in struct {
	Session uint64
	Hook    struct {
		ID, Event, Params, URL string
		Secret                 []byte
	}
	Headers []connector.Header
	Body    []byte
}

func (i in) hook() connector.Hook {
	return connector.Hook{ID: i.Hook.ID, Event: i.Hook.Event, Params: i.Hook.Params, URL: i.Hook.URL, Secret: i.Hook.Secret}
}

// impl returns the registered connector's hooks.
func impl() (connector.Hooks, error) {
	h, ok := connector.Registered().(connector.Hooks)
	if !ok {
		return nil, errors.New("the gatekeeper's connector does not implement hooks (connector.Hooks)")
	}
	return h, nil
}

// payload is the output of receive and poll: the JSON payload, or none.
func payload(p []byte, err error) (any, error) {
	if err != nil || p == nil {
		return nil, err
	}
	return json.RawMessage(p), nil
}

//go:wasmexport hook_subscribe
func exportSubscribe() int32 {
	return extism.Export(func(i in) (any, error) {
		h, err := impl()
		if err != nil {
			return nil, err
		}
		return nil, h.SubscribeHook(i.Session, i.hook())
	})
}

//go:wasmexport hook_unsubscribe
func exportUnsubscribe() int32 {
	return extism.Export(func(i in) (any, error) {
		h, err := impl()
		if err != nil {
			return nil, err
		}
		return nil, h.UnsubscribeHook(i.Session, i.hook())
	})
}

//go:wasmexport hook_receive
func exportReceive() int32 {
	return extism.Export(func(i in) (any, error) {
		h, err := impl()
		if err != nil {
			return nil, err
		}
		return payload(h.ReceiveHook(i.Session, i.hook(), i.Headers, i.Body))
	})
}

//go:wasmexport hook_poll
func exportPoll() int32 {
	return extism.Export(func(i in) (any, error) {
		h, err := impl()
		if err != nil {
			return nil, err
		}
		return payload(h.PollHook(i.Session, i.hook()))
	})
}
