// Package approvals implements atelier:gatekeeper/approvals: a gatekeeper records its reads
// (observations) and queues its side effects (actions) with the Sink bound to its instance
// (runtime.InstanceConfig.Bind[approvals.Grant]). The host functions check the sizes and the
// shape of what the guest sends and pass the call's context on, so that the Sink can tell
// which session the call serves. An instance without a binding may neither observe nor act.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:gatekeeper/approvals@0.1.0"
	Grant     = "atelier:gatekeeper/approvals"
)

// Size limits of what a guest may send.
const (
	MaxTitle       = 200
	MaxDescription = 64 << 10
	MaxPayload     = 1 << 20
)

// Observation is a read a gatekeeper is about to return.
type Observation struct {
	Title       string
	Description string // markdown
}

// ActionKind is the kind of an action; Tag is what auto-approval rules name.
type ActionKind struct {
	Tag, Label string
}

// Action is a side effect a gatekeeper wants to perform once approved.
type Action struct {
	Title       string
	Description string // markdown
	Kind        ActionKind
	// AutoApprovable is the guest's claim; the host honours it only for the kinds the
	// manifest lists.
	AutoApprovable   bool
	ImplementsRevert bool
	// Payload is handed back to the gatekeeper when the action is applied, rejected or reverted.
	Payload string
}

// Sink receives a gatekeeper instance's observations and actions. ctx is the context of the
// gatekeeper call being served. An error refuses: the guest gets its message.
type Sink interface {
	AuthorizeObservation(ctx context.Context, o Observation) error
	SubmitAction(ctx context.Context, a Action) (uint64, error)
}

// refuseAll is the Sink of an instance without a binding.
type refuseAll struct{}

var errUnbound = errors.New("this instance has no approval queue")

func (refuseAll) AuthorizeObservation(context.Context, Observation) error { return errUnbound }
func (refuseAll) SubmitAction(context.Context, Action) (uint64, error)    { return 0, errUnbound }

// New returns the host interface.
func New() runtime.HostInterface {
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{
			{Name: "authorize-observation", Func: authorize},
			{Name: "submit-action", Func: submit},
		},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			if info.Bind == nil {
				return Sink(refuseAll{}), nil
			}
			s, ok := info.Bind.(Sink)
			if !ok {
				return nil, fmt.Errorf("approvals: binding is %T, want an approvals.Sink", info.Bind)
			}
			return s, nil
		},
	}
}

// tagPattern is the shape of an action kind's tag.
var tagPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

func checkText(field, s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("%s of %d bytes exceeds %d", field, len(s), limit)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	return nil
}

// Check reports whether o is well-formed: a title, both texts valid UTF-8 within the limits.
func (o Observation) Check() error {
	err := errors.Join(checkText("title", o.Title, MaxTitle), checkText("description", o.Description, MaxDescription))
	if o.Title == "" {
		err = errors.Join(err, errors.New("empty title"))
	}
	if err != nil {
		return fmt.Errorf("observation refused: %w", err)
	}
	return nil
}

// Check reports whether a is well-formed: a title, a kind tag of lowercase letters, digits
// and dashes, all texts valid UTF-8 within the limits.
func (a Action) Check() error {
	err := errors.Join(
		checkText("title", a.Title, MaxTitle),
		checkText("description", a.Description, MaxDescription),
		checkText("kind label", a.Kind.Label, MaxTitle),
		checkText("payload", a.Payload, MaxPayload),
	)
	if a.Title == "" {
		err = errors.Join(err, errors.New("empty title"))
	}
	if !tagPattern.MatchString(a.Kind.Tag) {
		err = errors.Join(err, fmt.Errorf("kind tag %q is not lowercase letters, digits and dashes (1-64)", a.Kind.Tag))
	}
	if err != nil {
		return fmt.Errorf("action refused: %w", err)
	}
	return nil
}

func authorize(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	r := args[0].(ordered.Object) // a record, as wit.Lift makes it
	o := Observation{Title: r.Value("title").(string), Description: r.Value("description").(string)}
	if err := o.Check(); err != nil {
		return nil, runtime.Fail(err.Error())
	}
	if err := call.State().(Sink).AuthorizeObservation(ctx, o); err != nil {
		return nil, runtime.Fail(err.Error())
	}
	return nil, nil
}

func submit(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	r := args[0].(ordered.Object) // records, as wit.Lift makes them
	k := r.Value("kind").(ordered.Object)
	a := Action{
		Title:            r.Value("title").(string),
		Description:      r.Value("description").(string),
		Kind:             ActionKind{Tag: k.Value("tag").(string), Label: k.Value("label").(string)},
		AutoApprovable:   r.Value("auto-approvable").(bool),
		ImplementsRevert: r.Value("implements-revert").(bool),
		Payload:          r.Value("payload").(string),
	}
	if err := a.Check(); err != nil {
		return nil, runtime.Fail(err.Error())
	}
	id, err := call.State().(Sink).SubmitAction(ctx, a)
	if err != nil {
		return nil, runtime.Fail(err.Error())
	}
	return id, nil
}
