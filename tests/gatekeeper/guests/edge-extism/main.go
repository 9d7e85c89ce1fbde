//go:build wasip1

// Command edge-extism is the Extism gatekeeper of TestExtismSDKEdges (the tests of
// atelier/sdk/go/extism and its gatekeeper and host packages): each session method drives one
// edge of the SDK (a result that is not JSON, an error without a message, a refused fetch, a
// log level out of range) and reports what the SDK gave it.
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"atelier/sdk/go/extism/gatekeeper"
	"atelier/sdk/go/extism/host"
)

func init() { gatekeeper.Register(edge{}) }

func main() {}

// edge is a connector of one resource kind, "thing".
type edge struct{}

func (edge) Describe() gatekeeper.Vendor {
	return gatekeeper.Vendor{DisplayName: "Edge", URL: "https://edge.example.com", Tagline: "SDK edges", Description: "Test gatekeeper."}
}

func (edge) ResourceKinds() []gatekeeper.ResourceKind {
	return []gatekeeper.ResourceKind{{Kind: "thing", Title: "Thing", Description: "One thing."}}
}

func (edge) DescribeResource(url string) (gatekeeper.Resource, error) {
	return gatekeeper.Resource{URL: url, Title: "Thing", Snippet: "A thing", SuggestedBindingName: "thing"}, nil
}

func (edge) TypeScriptTypes() string {
	return "interface Thing { fetch(url: string): Promise<unknown> }\n"
}

func (edge) OpenSession(url, caller string) (uint64, error) { return 1, nil }

func (edge) Invoke(session uint64, method, args string) (string, error) {
	switch method {
	case "empty":
		return "", nil
	case "notJSON":
		return "{not json", nil
	case "silent":
		return "", errors.New("")
	case "log":
		host.Log(host.Level(7), "level 7")
		host.Log(host.Warn, "level warn")
		return "null", nil
	case "fetch":
		var params []string
		if err := json.Unmarshal([]byte(args), &params); err != nil || len(params) != 1 {
			return "", fmt.Errorf("fetch wants one URL: %v", err)
		}
		_, err := gatekeeper.Fetch(gatekeeper.Request{Method: "GET", URL: params[0]})
		var fe *gatekeeper.FetchError
		if !errors.As(err, &fe) {
			return "", fmt.Errorf("fetch of %s: %v is not a *gatekeeper.FetchError", params[0], err)
		}
		b, err := json.Marshal(map[string]any{"kind": fe.Kind.String(), "denied": fe.Kind == gatekeeper.Denied, "message": fe.Message})
		return string(b), err
	}
	return "", fmt.Errorf("unknown method %q", method)
}

func (edge) CloseSession(session uint64) {}

func (edge) ApplyAction(id uint64, payload string) (string, error) {
	return "", errors.New("no actions")
}

func (edge) RejectAction(id uint64, payload string) {}

func (edge) RevertAction(id uint64, payload string) (string, error) {
	return "", errors.New("no actions")
}
