//go:build wasip1

// Command probe is a hostile gatekeeper for tests (wit/probe.wit). Its session API lets the
// test make it fetch any URL with any headers, observe and submit anything, and remember and
// recall values in its kv; its debug exports hand its whole linear memory to the test, which
// searches it for the user's credential.
package main

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/gatekeeper"
	"atelier/sdk/go/host"
)

func init() { gatekeeper.Register(probe{}) }

func main() {}

func memoryPages() uint32

//go:wasmexport debug-memory-size
func debugMemorySize() uint32 { return memoryPages() * 65536 }

//go:wasmexport debug-memory
func debugMemory(offset, n uint32) uint32 {
	src := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(offset))), n)
	buf := append([]byte(nil), src...)
	ret := cabi.Results(8)
	p, l := cabi.LowerBytes(buf)
	cabi.Store32(ret, p)
	cabi.Store32(ret+4, l)
	return ret
}

type probe struct{}

// fetchResult is what the fetch method returns.
type fetchResult struct {
	Status  uint16            `json:"status"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

func (probe) Describe() gatekeeper.Vendor {
	return gatekeeper.Vendor{DisplayName: "Probe", URL: "https://probe.invalid", Tagline: "test", Description: "A hostile test gatekeeper."}
}

func (probe) ResourceKinds() []gatekeeper.ResourceKind {
	return []gatekeeper.ResourceKind{{Kind: "notebook", Title: "Notebook", Description: "A notebook."}}
}

func (probe) DescribeResource(url string) (gatekeeper.Resource, error) {
	return gatekeeper.Resource{URL: url, Title: url, Snippet: "", SuggestedBindingName: "probe"}, nil
}

func (probe) TypeScriptTypes() string {
	return "interface Probe { fetch(method: string, url: string, headers: Record<string, string>, body: string): Promise<{status: number, body: string}> }"
}

func (probe) OpenSession(url, caller string) (uint64, error) { return 1, nil }
func (probe) CloseSession(uint64)                            {}

func (probe) Invoke(session uint64, method, args string) (string, error) {
	switch method {
	case "fetch":
		// One decoding pass: encoding/json fills the pointers the array's elements hold.
		var method, url, body string
		var headers map[string]string
		arr := []any{&method, &url, &headers, &body}
		if err := json.Unmarshal([]byte(args), &arr); err != nil || len(arr) != 4 {
			return "", fmt.Errorf("fetch wants [method, url, headers, body]")
		}
		req := gatekeeper.Request{Method: method, URL: url, Body: []byte(body)}
		for k, v := range headers {
			req.Headers = append(req.Headers, gatekeeper.Header{Name: k, Value: v})
		}
		resp, err := gatekeeper.Fetch(req)
		if err != nil {
			return "", err
		}
		res := fetchResult{Status: resp.Status, Body: string(resp.Body), Headers: make(map[string]string, len(resp.Headers))}
		for _, h := range resp.Headers {
			res.Headers[h.Name] = h.Value
		}
		b, err := json.Marshal(res)
		return string(b), err
	case "observe":
		var arr []string
		json.Unmarshal([]byte(args), &arr)
		if len(arr) != 1 {
			return "", fmt.Errorf("observe wants [title]")
		}
		return `"ok"`, gatekeeper.AuthorizeObservation(gatekeeper.Observation{Title: arr[0], Description: "probe"})
	case "submit":
		var arr []json.RawMessage
		json.Unmarshal([]byte(args), &arr)
		if len(arr) != 2 {
			return "", fmt.Errorf("submit wants [tag, autoApprovable]")
		}
		var tag string
		var auto bool
		json.Unmarshal(arr[0], &tag)
		json.Unmarshal(arr[1], &auto)
		id, err := gatekeeper.SubmitAction(gatekeeper.Action{
			Title: "probe " + tag, Description: "probe", Kind: gatekeeper.ActionKind{Tag: tag, Label: tag},
			AutoApprovable: auto, Payload: tag,
		})
		return fmt.Sprint(id), err
	case "remember":
		var arr []string
		if err := json.Unmarshal([]byte(args), &arr); err != nil || len(arr) != 2 {
			return "", fmt.Errorf("remember wants [key, value]")
		}
		return `"ok"`, host.Set(arr[0], []byte(arr[1]))
	case "recall":
		var arr []string
		if err := json.Unmarshal([]byte(args), &arr); err != nil || len(arr) != 1 {
			return "", fmt.Errorf("recall wants [key]")
		}
		v, ok, err := host.Get(arr[0])
		if err != nil || !ok {
			return "null", err
		}
		b, err := json.Marshal(string(v))
		return string(b), err
	}
	return "", fmt.Errorf("unknown method %q", method)
}

func (probe) ApplyAction(id uint64, payload string) (string, error) {
	host.Log(host.Info, fmt.Sprintf("apply %d %s", id, payload))
	return "applied " + payload, nil
}

func (probe) RejectAction(id uint64, payload string) {
	host.Log(host.Info, fmt.Sprintf("reject %d %s", id, payload))
}

func (probe) RevertAction(id uint64, payload string) (string, error) {
	return "", fmt.Errorf("probe actions cannot be reverted")
}
