package gatekeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"atelier/host/capability/approvals"
	"atelier/host/capability/kv"
	"atelier/host/capability/outboundhttp"
	"atelier/host/runtime"
)

// Account is what one instance of a gatekeeper acts for: one user's connected account on one
// granted resource. The kernel fills it from its records (credentials decrypted with vault).
type Account struct {
	// Name identifies the instance (a gatekeeper ID); queue entries carry it.
	Name string
	// Resource is the granted resource URL; it must match one of the manifest's patterns.
	Resource string
	// Credentials maps each of the manifest's credential names to the user's secret.
	Credentials map[string]string
	// Token supplies the OAuth access token of an account of a gatekeeper whose manifest
	// declares oauth (required then, ignored otherwise).
	Token outboundhttp.TokenSource
	// Queue receives the instance's observations and actions.
	Queue Queue
	// Store is the gatekeeper's own kv state (nil: an empty in-memory store).
	Store kv.Store
	// Console receives the guest's log lines (nil drops them).
	Console func(runtime.ConsoleLine)
	// Limits bound each call and the instance's memory.
	Limits runtime.Limits
	// Memory, when set, shares the instance's memory out with others (GuestConfig.Memory).
	Memory runtime.MemoryAccount
}

// Instance is one live gatekeeper instance. It is safe for concurrent use; the guest runs one
// call at a time.
type Instance struct {
	g     *Gatekeeper
	name  string
	url   string
	kind  string
	queue Queue
	guest Guest
	// maxResult bounds a hook's payload (Account.Limits.MaxResult).
	maxResult int64
}

// Start creates an instance for acct. It refuses a resource the manifest does not serve and
// credentials that do not match the manifest's.
func (g *Gatekeeper) Start(ctx context.Context, acct Account) (*Instance, error) {
	m := &g.Package.Manifest
	grant, err := g.GrantFor(acct.Resource)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", m.Name, err)
	}
	if acct.Queue == nil {
		return nil, fmt.Errorf("start %s: no approval queue", m.Name)
	}
	policy := &outboundhttp.Policy{Schemes: m.Egress.Schemes, Hosts: m.Egress.Hosts, Prefixes: grant.Prefixes}
	for name := range acct.Credentials {
		if !slices.ContainsFunc(m.Credentials, func(c Credential) bool { return c.Name == name }) {
			return nil, fmt.Errorf("start %s: credential %q is not in the manifest", m.Name, name)
		}
	}
	for _, c := range m.Credentials {
		secret, ok := acct.Credentials[c.Name]
		if (!ok || secret == "") && c.Optional {
			continue
		}
		if !ok || secret == "" || strings.ContainsAny(secret, "\r\n\x00") {
			return nil, fmt.Errorf("start %s: credential %q is missing or not one line", m.Name, c.Name)
		}
		policy.Headers = append(policy.Headers, outboundhttp.Header{Name: c.Header, Value: strings.Replace(c.Template, "{secret}", secret, 1)})
		policy.Secrets = append(policy.Secrets, secret)
	}
	if o := m.OAuth; o != nil {
		if acct.Token == nil {
			return nil, fmt.Errorf("start %s: an OAuth account needs a token source", m.Name)
		}
		policy.Token, policy.TokenHeader = acct.Token, outboundhttp.Header{Name: o.Header, Value: o.Template}
	}
	in := &Instance{g: g, name: acct.Name, url: acct.Resource, kind: grant.Kind, queue: acct.Queue, maxResult: maxResult(acct.Limits)}
	policy.Scrubbed = sink{in}.scrubbed
	in.guest, err = g.code.Start(ctx, GuestConfig{
		Name: acct.Name, Resource: acct.Resource, Policy: policy, Sink: sink{in}, Store: acct.Store, Console: acct.Console, Limits: acct.Limits, Memory: acct.Memory,
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", m.Name, err)
	}
	return in, nil
}

// Name returns Account.Name.
func (in *Instance) Name() string { return in.name }

// Resource returns the granted resource URL and its kind.
func (in *Instance) Resource() (url, kind string) { return in.url, in.kind }

// Gatekeeper returns the installed package the instance runs.
func (in *Instance) Gatekeeper() *Gatekeeper { return in.g }

// Runtime returns the component instance of a component package (nil for other formats),
// for diagnostics and tests (a probe's debug exports). Calling the connector through it
// bypasses sessions and the approval bookkeeping.
func (in *Instance) Runtime() *runtime.Instance {
	if c, ok := in.guest.(*componentGuest); ok {
		return c.inst
	}
	return nil
}

// Guest returns the running guest, for format-specific diagnostics (an Extism plugin's
// memory). Calling it bypasses sessions and the approval bookkeeping.
func (in *Instance) Guest() Guest { return in.guest }

// Close ends the instance.
func (in *Instance) Close() error { return in.guest.Close() }

// fail names the instance and the connector function in a guest's error.
func (in *Instance) fail(fn string, err error) error {
	return fmt.Errorf("%s %s: %w", in.name, fn, err)
}

// Resource describes a granted resource.
type Resource struct {
	URL, Title, Snippet, SuggestedBindingName string
}

// DescribeResource asks the gatekeeper to describe its granted resource.
func (in *Instance) DescribeResource(ctx context.Context) (Resource, error) {
	r, err := in.guest.DescribeResource(ctx, in.url)
	if err != nil {
		return Resource{}, in.fail("describe-resource", err)
	}
	return r, nil
}

// TypeScriptTypes returns the declarations of the session API, for agents.
func (in *Instance) TypeScriptTypes(ctx context.Context) (string, error) {
	ts, err := in.guest.TypeScriptTypes(ctx)
	if err != nil {
		return "", in.fail("typescript-types", err)
	}
	return ts, nil
}

// Session is one caller's session on an instance.
type Session struct {
	in     *Instance
	id     uint64
	caller string
	closed atomic.Bool
}

// OpenSession opens a session for caller, an opaque label such as "agent:7" that queue
// entries carry.
func (in *Instance) OpenSession(ctx context.Context, caller string) (*Session, error) {
	id, err := in.guest.OpenSession(ctx, in.url, caller)
	if err != nil {
		return nil, in.fail("open-session", err)
	}
	return &Session{in: in, id: id, caller: caller}, nil
}

// Caller returns the label the session was opened with.
func (s *Session) Caller() string { return s.caller }

// callInfo is attached to the context of a session call: the approvals Sink reads it.
type callInfo struct {
	s         *Session
	submitted bool
}

type callKey struct{}

// Call invokes method of the session API with args, a JSON array, and returns the JSON
// result. When the call submitted actions, the queue is drained afterwards (Queue.Drain), so
// that auto-approved actions are applied once the call has returned.
func (s *Session) Call(ctx context.Context, method, args string) (string, error) {
	if s.closed.Load() {
		return "", fmt.Errorf("%s: session %d is closed", s.in.name, s.id)
	}
	var out string
	err := s.serve(ctx, "invoke", func(ctx context.Context) (err error) {
		out, err = s.in.guest.Invoke(ctx, s.id, method, args)
		return err
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// joinDrain adds the failure to apply auto-approved actions to err.
func joinDrain(err error, name string, derr error) error {
	return errors.Join(err, fmt.Errorf("%s: apply auto-approved actions: %w", name, derr))
}

// Close closes the session.
func (s *Session) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.in.guest.CloseSession(ctx, s.id); err != nil {
		return s.in.fail("close-session", err)
	}
	return nil
}

// ApplyAction performs approved action id (see Target).
func (in *Instance) ApplyAction(ctx context.Context, id uint64, payload string) (string, error) {
	msg, err := in.guest.ApplyAction(ctx, id, payload)
	if err != nil {
		return "", in.fail("apply-action", err)
	}
	return msg, nil
}

// RejectAction tells the gatekeeper that action id was rejected (see Target).
func (in *Instance) RejectAction(ctx context.Context, id uint64, payload string) error {
	if err := in.guest.RejectAction(ctx, id, payload); err != nil {
		return in.fail("reject-action", err)
	}
	return nil
}

// RevertAction undoes applied action id (see Target).
func (in *Instance) RevertAction(ctx context.Context, id uint64, payload string) (string, error) {
	msg, err := in.guest.RevertAction(ctx, id, payload)
	if err != nil {
		return "", in.fail("revert-action", err)
	}
	return msg, nil
}

// sink is the approvals.Sink of an instance: it attributes each observation and action to
// the session being served and forwards it to the account's queue.
type sink struct{ in *Instance }

func (k sink) origin(ctx context.Context) (Origin, *callInfo) {
	o := Origin{Gatekeeper: k.in.name, Package: k.in.g.Package.String(), Resource: k.in.url}
	ci, _ := ctx.Value(callKey{}).(*callInfo)
	if ci != nil {
		o.Caller, o.Session = ci.s.caller, ci.s.id
	}
	return o, ci
}

func (k sink) AuthorizeObservation(ctx context.Context, o approvals.Observation) error {
	origin, _ := k.origin(ctx)
	return k.in.queue.Observe(ctx, ObservationRecord{Origin: origin, Observation: o})
}

// scrubbed records, as an observation of the account, that the host removed the account's
// credentials from the response to a request of the gatekeeper (outboundhttp.Policy.Scrubbed).
func (k sink) scrubbed(ctx context.Context, method, url string, n int) error {
	return k.AuthorizeObservation(ctx, approvals.Observation{
		Title: "Credential removed from a response",
		Description: fmt.Sprintf("The response to `%s %s` contained this account's credential (%d times, as sent or encoded). "+
			"Atelier replaced each occurrence with `%s` before the gatekeeper saw it. A service that repeats the "+
			"credentials it receives may expose them in other ways too; see docs/security.md.", method, url, n, outboundhttp.CredentialMarker),
	})
}

func (k sink) SubmitAction(ctx context.Context, a approvals.Action) (uint64, error) {
	origin, ci := k.origin(ctx)
	if ci == nil {
		return 0, errors.New("actions can only be submitted while serving a session call")
	}
	// The guest's claim counts only for kinds the manifest lets users auto-approve.
	a.AutoApprovable = a.AutoApprovable && k.in.g.Package.Manifest.AutoApproves(a.Kind.Tag)
	id, err := k.in.queue.Submit(ctx, ActionRecord{Origin: origin, Action: a, Target: k.in})
	if err == nil {
		ci.submitted = true
	}
	return id, err
}
