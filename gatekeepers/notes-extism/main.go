//go:build wasip1

// Command notes-extism is the notes gatekeeper of gatekeepers/notes-go built as an Extism
// plugin (manifest "format": "extism") instead of a component: a core module whose plugin
// functions take and return JSON. The code is notes-go's glue with other imports:
// atelier/sdk/go/extism/gatekeeper and atelier/sdk/go/extism/host have the API of
// atelier/sdk/go/gatekeeper and atelier/sdk/go/host over the Extism ABI (no PDK). The notes
// logic is shared with notes-go in package atelier/gatekeepers/notes-go/notes.
//
// Build: gatekeepers/notes-extism/build.sh notes.wasm; package it with manifest.json (see
// docs/gatekeepers.md), or make a project of your own with
// `atelier new gatekeeper --lang go --format extism NAME`, which `atelier build` packs.
package main

import (
	"atelier/gatekeepers/notes-go/notes"
	"atelier/sdk/go/extism/gatekeeper"
	"atelier/sdk/go/extism/host"
)

func init() { gatekeeper.Register(connector{notes.New(extismHost{})}) }

func main() {}

// connector adapts notes.Notes to gatekeeper.Connector.
type connector struct{ *notes.Notes }

func (c connector) Describe() gatekeeper.Vendor { return gatekeeper.Vendor(c.Notes.Describe()) }

func (c connector) ResourceKinds() []gatekeeper.ResourceKind {
	var out []gatekeeper.ResourceKind
	for _, k := range c.Notes.ResourceKinds() {
		out = append(out, gatekeeper.ResourceKind(k))
	}
	return out
}

func (c connector) DescribeResource(url string) (gatekeeper.Resource, error) {
	r, err := c.Notes.DescribeResource(url)
	return gatekeeper.Resource(r), err
}

// extismHost is notes.Host over the Extism host functions.
type extismHost struct{}

func (extismHost) Fetch(method, url, contentType string, body []byte) (int, []byte, error) {
	req := gatekeeper.Request{Method: method, URL: url, Body: body}
	if contentType != "" {
		req.Headers = []gatekeeper.Header{{Name: "Content-Type", Value: contentType}}
	}
	resp, err := gatekeeper.Fetch(req)
	if err != nil {
		return 0, nil, err
	}
	return int(resp.Status), resp.Body, nil
}

func (extismHost) AuthorizeObservation(title, description string) error {
	return gatekeeper.AuthorizeObservation(gatekeeper.Observation{Title: title, Description: description})
}

func (extismHost) SubmitAction(a notes.Action) (uint64, error) {
	return gatekeeper.SubmitAction(gatekeeper.Action{
		Title: a.Title, Description: a.Description, Kind: gatekeeper.ActionKind(a.Kind),
		AutoApprovable: a.AutoApprovable, ImplementsRevert: a.ImplementsRevert, Payload: a.Payload,
	})
}

func (extismHost) Get(key string) ([]byte, bool, error) { return host.Get(key) }
func (extismHost) Set(key string, value []byte) error   { return host.Set(key, value) }
func (extismHost) Delete(key string) error              { return host.Delete(key) }
func (extismHost) Info(message string)                  { host.Log(host.Info, message) }
