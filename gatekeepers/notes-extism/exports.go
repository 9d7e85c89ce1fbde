//go:build wasip1

package main

// The plugin functions: the connector of atelier:gatekeeper/gatekeeper@0.1.0, one Extism
// function per connector function, with JSON input and output (see docs/gatekeepers.md).

import "encoding/json"

// Vendor describes the gatekeeper (output of describe).
type Vendor struct {
	DisplayName string `json:"displayName"`
	URL         string `json:"url"`
	Tagline     string `json:"tagline"`
	Description string `json:"description"`
}

// ResourceKind is one kind of resource served (output of resource_kinds).
type ResourceKind struct {
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Resource describes a granted resource (output of describe_resource).
type Resource struct {
	URL                  string `json:"url"`
	Title                string `json:"title"`
	Snippet              string `json:"snippet"`
	SuggestedBindingName string `json:"suggestedBindingName"`
}

type none struct{}

type urlIn struct {
	URL    string `json:"url"`
	Caller string `json:"caller"`
}

type invokeIn struct {
	Session uint64          `json:"session"`
	Method  string          `json:"method"`
	Args    json.RawMessage `json:"args"`
}

type actionIn struct {
	ID      uint64 `json:"id"`
	Payload string `json:"payload"`
}

//go:wasmexport describe
func describe() int32 {
	return export(func(none) (any, error) { return Vendor(gk.Describe()), nil })
}

//go:wasmexport resource_kinds
func resourceKinds() int32 {
	return export(func(none) (any, error) {
		var out []ResourceKind
		for _, k := range gk.ResourceKinds() {
			out = append(out, ResourceKind(k))
		}
		return out, nil
	})
}

//go:wasmexport describe_resource
func describeResource() int32 {
	return export(func(in urlIn) (any, error) {
		r, err := gk.DescribeResource(in.URL)
		return Resource(r), err
	})
}

//go:wasmexport typescript_types
func typescriptTypes() int32 {
	return export(func(none) (any, error) { return gk.TypeScriptTypes(), nil })
}

//go:wasmexport open_session
func openSession() int32 {
	return export(func(in urlIn) (any, error) { return gk.OpenSession(in.URL, in.Caller) })
}

//go:wasmexport invoke
func invoke() int32 {
	return export(func(in invokeIn) (any, error) {
		out, err := gk.Invoke(in.Session, in.Method, string(in.Args))
		return json.RawMessage(out), err
	})
}

//go:wasmexport close_session
func closeSession() int32 {
	return export(func(in struct {
		Session uint64 `json:"session"`
	}) (any, error) {
		gk.CloseSession(in.Session)
		return nil, nil
	})
}

//go:wasmexport apply_action
func applyAction() int32 {
	return export(func(in actionIn) (any, error) { return gk.ApplyAction(in.ID, in.Payload) })
}

//go:wasmexport reject_action
func rejectAction() int32 {
	return export(func(in actionIn) (any, error) {
		gk.RejectAction(in.ID, in.Payload)
		return nil, nil
	})
}

//go:wasmexport revert_action
func revertAction() int32 {
	return export(func(in actionIn) (any, error) { return gk.RevertAction(in.ID, in.Payload) })
}
