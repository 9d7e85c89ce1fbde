//go:build wasip1

package gatekeeper

import (
	"encoding/json"

	"atelier/sdk/go/extism"
)

// Vendor describes the gatekeeper (output of describe).
type Vendor struct {
	DisplayName string `json:"displayName"`
	URL         string `json:"url"`
	Tagline     string `json:"tagline"`
	Description string `json:"description"`
}

// ResourceKind is a kind of resource a user can grant (output of resource_kinds).
type ResourceKind struct {
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Resource describes one resource (output of describe_resource).
type Resource struct {
	URL                  string `json:"url"`
	Title                string `json:"title"`
	Snippet              string `json:"snippet"`
	SuggestedBindingName string `json:"suggestedBindingName"`
}

// Connector is what a gatekeeper implements; Register exports it as the plugin functions.
// The methods mirror the connector functions of atelier:gatekeeper/gatekeeper@0.1.0.
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

var impl Connector

// Register makes c the gatekeeper's connector. Call it once, from an init function.
func Register(c Connector) {
	if impl != nil {
		panic("gatekeeper: Register called twice")
	}
	impl = c
}

func connector() Connector {
	if impl == nil {
		panic("gatekeeper: no connector registered (call gatekeeper.Register in init)")
	}
	return impl
}

// The inputs of the plugin functions.
type (
	none    struct{}
	urlIn   struct{ URL, Caller string }
	session struct{ Session uint64 }
	invoke  struct {
		Session uint64
		Method  string
		Args    json.RawMessage
	}
	action struct {
		ID      uint64
		Payload string
	}
)

//go:wasmexport describe
func exportDescribe() int32 {
	return extism.Export(func(none) (any, error) { return connector().Describe(), nil })
}

//go:wasmexport resource_kinds
func exportResourceKinds() int32 {
	return extism.Export(func(none) (any, error) {
		kinds := connector().ResourceKinds()
		if kinds == nil {
			kinds = []ResourceKind{}
		}
		return kinds, nil
	})
}

//go:wasmexport describe_resource
func exportDescribeResource() int32 {
	return extism.Export(func(in urlIn) (any, error) { return connector().DescribeResource(in.URL) })
}

//go:wasmexport typescript_types
func exportTypeScriptTypes() int32 {
	return extism.Export(func(none) (any, error) { return connector().TypeScriptTypes(), nil })
}

//go:wasmexport open_session
func exportOpenSession() int32 {
	return extism.Export(func(in urlIn) (any, error) { return connector().OpenSession(in.URL, in.Caller) })
}

//go:wasmexport invoke
func exportInvoke() int32 {
	return extism.Export(func(in invoke) (any, error) {
		out, err := connector().Invoke(in.Session, in.Method, string(in.Args))
		return json.RawMessage(out), err
	})
}

//go:wasmexport close_session
func exportCloseSession() int32 {
	return extism.Export(func(in session) (any, error) {
		connector().CloseSession(in.Session)
		return nil, nil
	})
}

//go:wasmexport apply_action
func exportApplyAction() int32 {
	return extism.Export(func(in action) (any, error) { return connector().ApplyAction(in.ID, in.Payload) })
}

//go:wasmexport reject_action
func exportRejectAction() int32 {
	return extism.Export(func(in action) (any, error) {
		connector().RejectAction(in.ID, in.Payload)
		return nil, nil
	})
}

//go:wasmexport revert_action
func exportRevertAction() int32 {
	return extism.Export(func(in action) (any, error) { return connector().RevertAction(in.ID, in.Payload) })
}
