//go:build wasip1

package gatekeeper

import (
	"unsafe"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/connector"
)

// The HTTP types of connector (atelier/sdk/go/connector), shared by both formats.
type (
	// Header is one header line (`outbound-http.header`).
	Header = connector.Header
	// Request is an HTTP request (`outbound-http.request`); URL is absolute.
	Request = connector.Request
	// Response is an HTTP response with its whole body (`outbound-http.response`).
	Response = connector.Response
	// FetchErrorKind is the case of `outbound-http.error`.
	FetchErrorKind = connector.FetchErrorKind
	// FetchError is an `outbound-http.error` returned by the host.
	FetchError = connector.FetchError
)

// The cases of `outbound-http.error`, in WIT order.
const (
	Denied   = connector.Denied
	Invalid  = connector.Invalid
	TooLarge = connector.TooLarge
	Failed   = connector.Failed
)

//go:wasmimport atelier:gatekeeper/outbound-http@0.1.0 fetch
func httpFetch(method, url string, headers, nHeaders uint32, body unsafe.Pointer, bodyLen uint32, ret uint32)

// lowerHeaders copies hs into a list<header> (16 bytes each: name@0, value@8) and returns its
// address and the blocks to free after the call.
func lowerHeaders(hs []Header) (ptr uint32, blocks []uint32) {
	if len(hs) == 0 {
		return 0, nil
	}
	ptr = cabi.Alloc(uint32(len(hs)) * 16)
	blocks = append(blocks, ptr)
	for i, h := range hs {
		e := ptr + uint32(i)*16
		np, nn := cabi.CopyString(h.Name)
		vp, vn := cabi.CopyString(h.Value)
		blocks = append(blocks, np, vp)
		cabi.Store32(e, np)
		cabi.Store32(e+4, nn)
		cabi.Store32(e+8, vp)
		cabi.Store32(e+12, vn)
	}
	return ptr, blocks
}

// liftHeaders lifts the list<header> of n elements at ptr and frees it.
func liftHeaders(ptr, n uint32) []Header {
	hs := make([]Header, n)
	for i := range hs {
		e := ptr + uint32(i)*16
		hs[i] = Header{
			Name:  cabi.TakeString(cabi.Load32(e), cabi.Load32(e+4)),
			Value: cabi.TakeString(cabi.Load32(e+8), cabi.Load32(e+12)),
		}
	}
	cabi.Free(ptr)
	return hs
}

// Fetch sends req through the host (`outbound-http.fetch`). A refused or failed request
// returns a *FetchError.
func Fetch(req Request) (*Response, error) {
	hp, blocks := lowerHeaders(req.Headers)
	defer func() {
		for _, b := range blocks {
			cabi.Free(b)
		}
	}()
	ret := cabi.Ret()
	httpFetch(req.Method, req.URL, hp, uint32(len(req.Headers)), unsafe.Pointer(unsafe.SliceData(req.Body)), uint32(len(req.Body)), ret)
	// result<response, error>: tag@0, payload@4. response: status@0 (u16), headers@4, body@12.
	// error: case@0, message@4.
	p := ret + 4
	if cabi.Load8(ret) != 0 {
		return nil, &FetchError{Kind: FetchErrorKind(cabi.Load8(p)), Message: cabi.TakeString(cabi.Load32(p+4), cabi.Load32(p+8))}
	}
	status := uint16(cabi.Load8(p)) | uint16(cabi.Load8(p+1))<<8
	hPtr, hLen := cabi.Load32(p+4), cabi.Load32(p+8)
	bPtr, bLen := cabi.Load32(p+12), cabi.Load32(p+16)
	return &Response{Status: status, Headers: liftHeaders(hPtr, hLen), Body: cabi.TakeBytes(bPtr, bLen)}, nil
}
