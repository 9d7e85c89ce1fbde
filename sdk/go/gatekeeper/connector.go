//go:build wasip1

package gatekeeper

import "atelier/sdk/go/cabi"

// Vendor describes the gatekeeper (`connector.vendor`).
type Vendor struct {
	DisplayName, URL, Tagline, Description string
}

// ResourceKind is a kind of resource a user can grant (`connector.resource-kind`).
type ResourceKind struct {
	Kind, Title, Description string
}

// Resource describes one resource (`connector.resource`).
type Resource struct {
	URL, Title, Snippet, SuggestedBindingName string
}

// Connector is what a gatekeeper implements; Register exports it as the `connector` interface.
// The methods mirror the WIT functions of the same names.
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
	v := connector().Describe()
	ret := cabi.Results(32)
	storeStrings(ret, v.DisplayName, v.URL, v.Tagline, v.Description)
	return ret
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#resource-kinds
func exportResourceKinds() uint32 {
	kinds := connector().ResourceKinds()
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
	r, err := connector().DescribeResource(cabi.TakeString(urlPtr, urlLen))
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
func exportTypeScriptTypes() uint32 { return cabi.ReturnString(connector().TypeScriptTypes()) }

//go:wasmexport atelier:gatekeeper/connector@0.1.0#open-session
func exportOpenSession(urlPtr, urlLen, callerPtr, callerLen uint32) uint32 {
	id, err := connector().OpenSession(cabi.TakeString(urlPtr, urlLen), cabi.TakeString(callerPtr, callerLen))
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
	return cabi.ReturnResultString(connector().Invoke(session, cabi.TakeString(methodPtr, methodLen), cabi.TakeString(argsPtr, argsLen)))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#close-session
func exportCloseSession(session uint64) { connector().CloseSession(session) }

//go:wasmexport atelier:gatekeeper/connector@0.1.0#apply-action
func exportApplyAction(id uint64, payloadPtr, payloadLen uint32) uint32 {
	return cabi.ReturnResultString(connector().ApplyAction(id, cabi.TakeString(payloadPtr, payloadLen)))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#reject-action
func exportRejectAction(id uint64, payloadPtr, payloadLen uint32) {
	connector().RejectAction(id, cabi.TakeString(payloadPtr, payloadLen))
}

//go:wasmexport atelier:gatekeeper/connector@0.1.0#revert-action
func exportRevertAction(id uint64, payloadPtr, payloadLen uint32) uint32 {
	return cabi.ReturnResultString(connector().RevertAction(id, cabi.TakeString(payloadPtr, payloadLen)))
}
