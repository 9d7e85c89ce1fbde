package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/host/store"
	"atelier/internal/membudget"
)

// Inbound webhooks: the gateway hands POST /hooks/<id> to DeliverHook, which finds the hook's
// workspace in the server-wide index (an unknown id costs one index read and no body is read),
// reads the body (at most MaxHookBody), and delivers it on the node that runs the workspace:
// there the signature is checked with the manifest's HookSignature and the hook's secret, the
// hook's rate is spent, the gatekeeper turns the request into the event's payload
// (ReceiveHook, on the hook's own session) and the gadget's method runs (fire).

// MaxHookBody is the largest webhook request body accepted.
const MaxHookBody = 1 << 20

// HookDelivery is the outcome of an inbound webhook request: the HTTP status, a one-line
// message, and for a 429 how long to wait.
type HookDelivery struct {
	Status     int           `json:"status"`
	Message    string        `json:"message"`
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

func delivery(status int, format string, args ...any) HookDelivery {
	return HookDelivery{Status: status, Message: fmt.Sprintf(format, args...)}
}

// DeliverHook delivers an inbound request for hook id (its header and body, sent from address
// from) and says how to answer it: 200 once the gadget's method returned (or the gatekeeper dropped the event), 404
// for an unknown or removed hook, 413 for a body past MaxHookBody, 401 for a bad signature,
// 429 past the hook's rate (or past the refusals an address may cause, hookRefusals), 503 when
// too many deliveries are in flight, 502 when the gatekeeper or the method failed.
func (k *Kernel) DeliverHook(ctx context.Context, id, from string, header http.Header, body io.Reader) HookDelivery {
	release, refused := k.hooks.admit(from)
	if release == nil {
		return refused
	}
	defer release()
	if !validHookID(id) {
		return delivery(http.StatusNotFound, "no such hook")
	}
	ref, err := k.st.HookRef(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return delivery(http.StatusNotFound, "no such hook")
	} else if err != nil {
		k.log.Warn("webhook", "hook", id, "err", err)
		return delivery(http.StatusInternalServerError, "the server could not look the hook up; retry later")
	}
	// Whoever knows a hook's URL can make the host read a body, wake the workspace and check
	// a signature before anything is authenticated: the requests the signature check refuses
	// are bounded per hook and sending address (every request takes a token, all but a 401
	// give it back), so a stranger's refusals never throttle the service's signed requests.
	key := id + " " + from
	if wait := k.hooks.refusals.Take(key); wait > 0 {
		d := delivery(http.StatusTooManyRequests, "hook %s: too many requests from your address failed the signature check; retry later", id)
		d.RetryAfter = wait
		return d
	}
	d := k.deliverBody(ctx, ref.Workspace, id, header, body)
	if d.Status != http.StatusUnauthorized {
		k.hooks.refusals.Refund(key)
	}
	return d
}

// admit takes a place for a delivery from address from, or says why there is none: 503 when
// the server's HookInflight are taken, 429 when from's network (membudget.ClientNetwork) holds
// its quarter of them. release gives the place back.
func (h *hookState) admit(from string) (release func(), refused HookDelivery) {
	share := h.inflight.Share(from)
	switch share.Reserve(1) {
	case membudget.Server:
		return nil, delivery(http.StatusServiceUnavailable, "too many webhook deliveries in flight; retry later")
	case membudget.Address:
		d := delivery(http.StatusTooManyRequests, "too many webhook deliveries from your address in flight; retry when they are answered")
		d.RetryAfter = time.Second
		return nil, d
	}
	return func() { share.Release(1) }, HookDelivery{}
}

// deliverBody reads body (at most MaxHookBody) and delivers it with deliverAt.
func (k *Kernel) deliverBody(ctx context.Context, ws store.WorkspaceID, id string, header http.Header, body io.Reader) HookDelivery {
	data, err := io.ReadAll(io.LimitReader(body, MaxHookBody+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return delivery(http.StatusRequestTimeout, "the body did not arrive in time")
	}
	if err != nil {
		return delivery(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(data) > MaxHookBody {
		return delivery(http.StatusRequestEntityTooLarge, "the body exceeds %d bytes", MaxHookBody)
	}
	return k.deliverAt(ctx, ws, id, header, data)
}

// deliverAt delivers on the node that runs workspace ws: this one, or the one a cluster names
// (following the workspace when it moves, as routed calls do).
func (k *Kernel) deliverAt(ctx context.Context, ws store.WorkspaceID, id string, header http.Header, body []byte) HookDelivery {
	var last error
	for m := k.followMoves(); ; {
		more, err := m.next(ctx)
		if err != nil || !more {
			break
		}
		if c := k.cfg.Cluster; c != nil {
			if node, held, err := c.Holder(ctx, ws); err == nil && held && node != c.Self() {
				d, err := k.forwardHook(ctx, node, id, header, body)
				if err == nil {
					return d
				}
				if last = err; !moved(err) {
					break
				}
				continue
			}
		}
		d, err := k.receiveAt(ctx, ws, id, header, body)
		if err == nil {
			return d
		}
		if last = err; !moved(err) {
			break
		}
	}
	if errCode(last) == CodeNotFound {
		return delivery(http.StatusNotFound, "no such hook")
	}
	k.log.Warn("webhook", "hook", id, "err", last)
	return delivery(http.StatusServiceUnavailable, "the hook's workspace is not reachable now; retry later")
}

// hookPeerToken is the token hash of the peer sessions that forward webhook deliveries
// (PeerMain): not a hash of any token, which are hex.
const hookPeerToken = "hooks"

// forwardHook delivers on node, which runs the hook's workspace.
func (k *Kernel) forwardHook(ctx context.Context, node store.NodeID, id string, header http.Header, body []byte) (HookDelivery, error) {
	sess, err := k.hooks.peers.get(ctx, node, func(ctx context.Context) (*capnweb.Session, error) {
		return k.cfg.Cluster.Dial(ctx, node, hookPeerToken)
	})
	if err != nil {
		return HookDelivery{}, fail(CodeMoved, "reach node %s: %v", node, err)
	}
	h := make(map[string]any, len(header))
	for name, vs := range header {
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		h[name] = list
	}
	peer := sess.Main() // a reference of the kept session's main object, given back below
	defer peer.Dispose()
	d, err := capnweb.AwaitAs[HookDelivery](ctx, peer.Call(ctx, "deliverHook", id, h, body))
	if err != nil && sess.Err() != nil { // the session ended (the node went, or restarted)
		k.hooks.peers.drop(node, sess)
		return HookDelivery{}, fail(CodeMoved, "reach node %s: %v", node, err)
	}
	return d, err
}

// hookPeer is the main object of a peer session that forwards webhook deliveries.
type hookPeer struct {
	capnweb.Target
	k *Kernel
}

// DeliverHook delivers a request another node received for hook id on this node (MOVED when
// the workspace runs elsewhere now).
func (p *hookPeer) DeliverHook(ctx context.Context, id string, header map[string]any, body []byte) (HookDelivery, error) {
	hdr := make(http.Header, len(header))
	for name, vs := range header {
		list, _ := vs.([]any)
		for _, v := range list {
			if s, ok := v.(string); ok {
				hdr[name] = append(hdr[name], s)
			}
		}
	}
	ref, err := p.k.st.HookRef(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return delivery(http.StatusNotFound, "no such hook"), nil
	} else if err != nil {
		return HookDelivery{}, err
	}
	return p.k.receiveAt(ctx, ref.Workspace, id, hdr, body)
}

// receiveAt delivers on this node, in the overseer of workspace ws; its error is the
// workspace's (stopped, moved).
func (k *Kernel) receiveAt(ctx context.Context, ws store.WorkspaceID, id string, header http.Header, body []byte) (HookDelivery, error) {
	var d HookDelivery
	err := k.withOverseer(ctx, ws, func(ov *overseer) error {
		var err error
		d, err = ov.receiveHook(ctx, id, header, body)
		return err
	})
	return d, err
}

// receiveHook is a delivery on the node running the workspace. Its error is the workspace's
// (stopped, moved); the request's outcome is the HookDelivery.
func (ov *overseer) receiveHook(ctx context.Context, id string, header http.Header, body []byte) (HookDelivery, error) {
	h, err := ov.hook(id)
	if errCode(err) == CodeNotFound {
		return delivery(http.StatusNotFound, "no such hook"), nil
	} else if err != nil {
		return HookDelivery{}, err
	}
	p, rec, reason, err := ov.hookTarget(ctx, h)
	if err != nil {
		return HookDelivery{}, err
	}
	if reason != "" {
		_ = ov.removeHooks(ctx, []store.Hook{h}, "hooks", reason)
		return delivery(http.StatusNotFound, "no such hook"), nil
	}
	acct, err := ov.k.st.Account(ctx, h.Account)
	if err != nil {
		return HookDelivery{}, err
	}
	gk, err := ov.k.gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return HookDelivery{}, err
	}
	spec, ok := gk.Package.Manifest.HookSpec(h.Event)
	if !ok || spec.Source != gatekeeper.HookWebhook || spec.Signature == nil {
		return delivery(http.StatusNotFound, "hook %s takes no webhook requests (its gatekeeper's event %q is not a webhook)", id, h.Event), nil
	}
	gh, err := ov.k.gkHook(h)
	if err != nil {
		return HookDelivery{}, err
	}
	if err := spec.Signature.Verify(gh.Secret, header, body, time.Now()); err != nil {
		return delivery(http.StatusUnauthorized, "%v", err), nil
	}
	if wait := ov.k.hooks.rate.Take(id); wait > 0 {
		d := delivery(http.StatusTooManyRequests, "hook %s is over its rate; retry later", id)
		d.RetryAfter = wait
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ov.k.callTimeout())
	defer cancel()
	sess, err := ov.hookSession(ctx, h)
	if err != nil {
		return delivery(http.StatusBadGateway, "the gatekeeper could not start: %v", err), nil
	}
	payload, err := sess.ReceiveHook(ctx, gh, header, body)
	if err != nil {
		ov.links.cut(hookLinkKey(h)) // a failed guest starts afresh next time
		_ = ov.recordFire(ctx, p, rec.Name, h.ID, false, fmt.Errorf("receive: %w", err), time.Time{})
		return delivery(http.StatusBadGateway, "the gatekeeper refused the request: %v", err), nil
	}
	if payload == nil {
		return delivery(http.StatusOK, "dropped"), nil
	}
	if err := ov.fire(ctx, p, rec, h, payload, time.Time{}); err != nil {
		if errors.Is(err, errStopped) {
			return HookDelivery{}, err
		}
		return delivery(http.StatusBadGateway, "%s: %v", h.Method, err), nil
	}
	return delivery(http.StatusOK, "ok"), nil
}
