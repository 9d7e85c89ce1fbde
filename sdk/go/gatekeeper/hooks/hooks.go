//go:build wasip1

// Package hooks exports the `hooks` interface of the atelier:gatekeeper/gatekeeper-with-hooks
// world for a Go gatekeeper whose registered connector (atelier/sdk/go/gatekeeper.Register)
// also implements connector.Hooks. Import it for its side effect in the gatekeeper's main
// package, target the gatekeeper-with-hooks world in the guest's WIT and name that world in
// the manifest:
//
//	import _ "atelier/sdk/go/gatekeeper/hooks"
//
// A gatekeeper that does not import it exports no hooks (and must not name that world).
package hooks

import (
	"errors"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/connector"
)

// Hook is one registered hook (`hooks.hook`).
type Hook = connector.Hook

// impl returns the registered connector's hooks.
func impl() (connector.Hooks, error) {
	h, ok := connector.Registered().(connector.Hooks)
	if !ok {
		return nil, errors.New("the gatekeeper's connector does not implement hooks (connector.Hooks)")
	}
	return h, nil
}

// liftHook lifts the flattened `hooks.hook` record.
func liftHook(idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen uint32) Hook {
	return Hook{
		ID:     cabi.TakeString(idPtr, idLen),
		Event:  cabi.TakeString(evPtr, evLen),
		Params: cabi.TakeString(parPtr, parLen),
		URL:    cabi.TakeString(urlPtr, urlLen),
		Secret: cabi.TakeBytes(secPtr, secLen),
	}
}

// liftHeaders lifts the list<header> of n elements at ptr (16 bytes each: name@0, value@8)
// and frees it.
func liftHeaders(ptr, n uint32) []connector.Header {
	hs := make([]connector.Header, n)
	for i := range hs {
		e := ptr + uint32(i)*16
		hs[i] = connector.Header{
			Name:  cabi.TakeString(cabi.Load32(e), cabi.Load32(e+4)),
			Value: cabi.TakeString(cabi.Load32(e+8), cabi.Load32(e+12)),
		}
	}
	cabi.Free(ptr)
	return hs
}

// returnUnit lowers a result<_, string> (tag@0, error string@4).
func returnUnit(err error) uint32 {
	ret := cabi.Results(12)
	if err != nil {
		cabi.Store8(ret, 1)
		p, n := cabi.LowerString(err.Error())
		cabi.Store32(ret+4, p)
		cabi.Store32(ret+8, n)
	}
	return ret
}

// returnPayload lowers a result<option<string>, string>: tag@0; ok: option tag@4, string@8;
// err: string@4.
func returnPayload(payload []byte, err error) uint32 {
	ret := cabi.Results(16)
	switch {
	case err != nil:
		cabi.Store8(ret, 1)
		p, n := cabi.LowerString(err.Error())
		cabi.Store32(ret+4, p)
		cabi.Store32(ret+8, n)
	case payload != nil:
		cabi.Store8(ret+4, 1)
		p, n := cabi.LowerBytes(payload)
		cabi.Store32(ret+8, p)
		cabi.Store32(ret+12, n)
	}
	return ret
}

//go:wasmexport atelier:gatekeeper/hooks@0.1.0#subscribe
func exportSubscribe(session uint64, idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen uint32) uint32 {
	h := liftHook(idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen)
	c, err := impl()
	if err == nil {
		err = c.SubscribeHook(session, h)
	}
	return returnUnit(err)
}

//go:wasmexport atelier:gatekeeper/hooks@0.1.0#unsubscribe
func exportUnsubscribe(session uint64, idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen uint32) uint32 {
	h := liftHook(idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen)
	c, err := impl()
	if err == nil {
		err = c.UnsubscribeHook(session, h)
	}
	return returnUnit(err)
}

//go:wasmexport atelier:gatekeeper/hooks@0.1.0#receive
func exportReceive(session uint64, idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen, hPtr, hLen, bodyPtr, bodyLen uint32) uint32 {
	h := liftHook(idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen)
	headers := liftHeaders(hPtr, hLen)
	body := cabi.TakeBytes(bodyPtr, bodyLen)
	c, err := impl()
	if err != nil {
		return returnPayload(nil, err)
	}
	return returnPayload(c.ReceiveHook(session, h, headers, body))
}

//go:wasmexport atelier:gatekeeper/hooks@0.1.0#poll
func exportPoll(session uint64, idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen uint32) uint32 {
	h := liftHook(idPtr, idLen, evPtr, evLen, parPtr, parLen, urlPtr, urlLen, secPtr, secLen)
	c, err := impl()
	if err != nil {
		return returnPayload(nil, err)
	}
	return returnPayload(c.PollHook(session, h))
}
