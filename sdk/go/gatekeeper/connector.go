//go:build wasip1

package gatekeeper

import (
	"atelier/sdk/go/cabi"
	"atelier/sdk/go/connector"
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

// storeStrings stores ss as consecutive strings (8 bytes each) at ptr.
func storeStrings(ptr uint32, ss ...string) {
	for i, s := range ss {
		p, n := cabi.LowerString(s)
		cabi.Store32(ptr+uint32(i)*8, p)
		cabi.Store32(ptr+uint32(i)*8+4, n)
	}
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#describe
func exportDescribe() uint32 {
	v := connector.Registered().Describe()
	ret := cabi.Results(32)
	storeStrings(ret, v.DisplayName, v.URL, v.Tagline, v.Description)
	return ret
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#resource-kinds
func exportResourceKinds() uint32 {
	kinds := connector.Registered().ResourceKinds()
	ret := cabi.Results(8)
	list := cabi.LowerList(uint32(len(kinds)), 24)
	for i, k := range kinds {
		storeStrings(list+uint32(i)*24, k.Kind, k.Title, k.Description)
	}
	cabi.Store32(ret, list)
	cabi.Store32(ret+4, uint32(len(kinds)))
	return ret
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#describe-resource
func exportDescribeResource(urlPtr, urlLen uint32) uint32 {
	r, err := connector.Registered().DescribeResource(cabi.TakeString(urlPtr, urlLen))
	ret := cabi.Results(36) // result<resource, string>: tag@0, payload@4
	if err != nil {
		cabi.Store8(ret, 1)
		storeStrings(ret+4, err.Error())
		return ret
	}
	storeStrings(ret+4, r.URL, r.Title, r.Snippet, r.SuggestedBindingName)
	return ret
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#typescript-types
func exportTypeScriptTypes() uint32 {
	return cabi.ReturnString(connector.Registered().TypeScriptTypes())
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#open-session
func exportOpenSession(urlPtr, urlLen, callerPtr, callerLen uint32) uint32 {
	id, err := connector.Registered().OpenSession(cabi.TakeString(urlPtr, urlLen), cabi.TakeString(callerPtr, callerLen))
	ret := cabi.Results(16) // result<u64, string>: tag@0, payload@8
	if err != nil {
		cabi.Store8(ret, 1)
		storeStrings(ret+8, err.Error())
		return ret
	}
	cabi.Store64(ret+8, id)
	return ret
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#invoke
func exportInvoke(session uint64, methodPtr, methodLen, argsPtr, argsLen uint32) uint32 {
	return cabi.ReturnResultString(connector.Registered().Invoke(session, cabi.TakeString(methodPtr, methodLen), cabi.TakeString(argsPtr, argsLen)))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#close-session
func exportCloseSession(session uint64) { connector.Registered().CloseSession(session) }

//go:wasmexport atelier:gatekeeper/connector@0.1.0#apply-action
func exportApplyAction(id uint64, payloadPtr, payloadLen uint32) uint32 {
	return cabi.ReturnResultString(connector.Registered().ApplyAction(id, cabi.TakeString(payloadPtr, payloadLen)))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#reject-action
func exportRejectAction(id uint64, payloadPtr, payloadLen uint32) {
	connector.Registered().RejectAction(id, cabi.TakeString(payloadPtr, payloadLen))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#revert-action
func exportRevertAction(id uint64, payloadPtr, payloadLen uint32) uint32 {
	return cabi.ReturnResultString(connector.Registered().RevertAction(id, cabi.TakeString(payloadPtr, payloadLen)))
}
