//go:build wasip1

package gatekeeper

import (
	"encoding/json"

	"atelier/sdk/go/connector"
	"atelier/sdk/go/extism"
)

// The types and registration of connector (atelier/sdk/go/connector), shared by both formats.
type (
	// Vendor describes the gatekeeper (`connector.vendor`).
	Vendor = connector.Vendor
	// ResourceKind is a kind of resource a user can grant (`connector.resource-kind`).
	ResourceKind = connector.ResourceKind
	// Resource describes one resource (`connector.resource`).
	Resource = connector.Resource
	// Connector is what a gatekeeper implements; Register exports it.
	Connector = connector.Connector
)

// Register makes c the gatekeeper's connector. Call it once, from an init function.
func Register(c Connector) { connector.Register(c) }

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
	return extism.Export(func(none) (any, error) { return connector.Registered().Describe(), nil })
}

//go:wasmexport resource_kinds
func exportResourceKinds() int32 {
	return extism.Export(func(none) (any, error) {
		kinds := connector.Registered().ResourceKinds()
		if kinds == nil {
			kinds = []ResourceKind{}
		}
		return kinds, nil
	})
}

//go:wasmexport describe_resource
func exportDescribeResource() int32 {
	return extism.Export(func(in urlIn) (any, error) { return connector.Registered().DescribeResource(in.URL) })
}

//go:wasmexport typescript_types
func exportTypeScriptTypes() int32 {
	return extism.Export(func(none) (any, error) { return connector.Registered().TypeScriptTypes(), nil })
}

//go:wasmexport open_session
func exportOpenSession() int32 {
	return extism.Export(func(in urlIn) (any, error) { return connector.Registered().OpenSession(in.URL, in.Caller) })
}

//go:wasmexport invoke
func exportInvoke() int32 {
	return extism.Export(func(in invoke) (any, error) {
		out, err := connector.Registered().Invoke(in.Session, in.Method, string(in.Args))
		return json.RawMessage(out), err
	})
}

//go:wasmexport close_session
func exportCloseSession() int32 {
	return extism.Export(func(in session) (any, error) {
		connector.Registered().CloseSession(in.Session)
		return nil, nil
	})
}

//go:wasmexport apply_action
func exportApplyAction() int32 {
	return extism.Export(func(in action) (any, error) { return connector.Registered().ApplyAction(in.ID, in.Payload) })
}

//go:wasmexport reject_action
func exportRejectAction() int32 {
	return extism.Export(func(in action) (any, error) {
		connector.Registered().RejectAction(in.ID, in.Payload)
		return nil, nil
	})
}

//go:wasmexport revert_action
func exportRevertAction() int32 {
	return extism.Export(func(in action) (any, error) { return connector.Registered().RevertAction(in.ID, in.Payload) })
}
