// Package connector is what a Go gatekeeper implements, in either of its formats: a component
// of the atelier:gatekeeper world (atelier/sdk/go/gatekeeper) or an Extism plugin
// (atelier/sdk/go/extism/gatekeeper). Both SDKs register a Connector here and export it, and
// both alias the types here, those of the connector and those their host functions take and
// return (Request, Response, FetchError, Observation, Action, ...), so one connector builds
// unchanged against either. Authors use the types through the SDK they build with
// (gatekeeper.Vendor, gatekeeper.Register, gatekeeper.Request, ...). The package has no
// build constraint and no ABI: code shared by both formats (gatekeepers/notes-go/notes) can
// import it.
package connector

// Vendor describes the gatekeeper (`connector.vendor`, the output of describe).
type Vendor struct {
	DisplayName string `json:"displayName"`
	URL         string `json:"url"`
	Tagline     string `json:"tagline"`
	Description string `json:"description"`
}

// ResourceKind is a kind of resource a user can grant (`connector.resource-kind`).
type ResourceKind struct {
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Resource describes one resource (`connector.resource`, the output of describe-resource).
type Resource struct {
	URL                  string `json:"url"`
	Title                string `json:"title"`
	Snippet              string `json:"snippet"`
	SuggestedBindingName string `json:"suggestedBindingName"`
}

// Connector is what a gatekeeper implements. Its methods mirror the functions of the WIT
// interface atelier:gatekeeper/connector@0.1.0.
type Connector interface {
	Describe() Vendor
	ResourceKinds() []ResourceKind
	DescribeResource(url string) (Resource, error)
	TypeScriptTypes() string
	OpenSession(url, caller string) (uint64, error)
	Invoke(session uint64, method, args string) (string, error)
	CloseSession(session uint64)
	ApplyAction(id uint64, payload string) (string, error)
	RejectAction(id uint64, payload string)
	RevertAction(id uint64, payload string) (string, error)
}

var registered Connector

// Register makes c the gatekeeper's connector. Call it once, from an init function.
func Register(c Connector) {
	if registered != nil {
		panic("gatekeeper: Register called twice")
	}
	registered = c
}

// Registered returns the connector Register was given; it panics when there is none.
func Registered() Connector {
	if registered == nil {
		panic("gatekeeper: no connector registered (call gatekeeper.Register in init)")
	}
	return registered
}

// Hook is one hook a gadget registered (`hooks.hook` of the gatekeeper-with-hooks world).
type Hook struct {
	// ID is the hook's id ("hk_…").
	ID string
	// Event is one of the manifest's hooks[].event.
	Event string
	// Params is the JSON the gadget registered the hook with ("" when none).
	Params string
	// URL is the public URL the service is to POST to (webhook events).
	URL string
	// Secret keys the webhook's HMAC; give it to the service (webhook events).
	Secret []byte
}

// Hooks is implemented by a connector that also serves hooks (the `hooks` interface of the
// gatekeeper-with-hooks world; a component exports it by importing
// atelier/sdk/go/gatekeeper/hooks). Its methods mirror that interface's functions; session is
// a session the host opened with OpenSession.
type Hooks interface {
	// SubscribeHook sets up hook h at the service (a webhook: create it with h.URL and
	// h.Secret); an error refuses the hook.
	SubscribeHook(session uint64, h Hook) error
	// UnsubscribeHook undoes SubscribeHook (best effort).
	UnsubscribeHook(session uint64, h Hook) error
	// ReceiveHook turns an inbound webhook request, whose signature the host verified, into
	// the JSON payload for the gadget; nil drops the event.
	ReceiveHook(session uint64, h Hook, headers []Header, body []byte) (payload []byte, err error)
	// PollHook returns the JSON payload of what is new for poll hook h, or nil.
	PollHook(session uint64, h Hook) (payload []byte, err error)
}
