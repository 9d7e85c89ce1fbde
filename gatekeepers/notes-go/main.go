//go:build wasip1

// Command notes-go is an example gatekeeper (wit/notes.wit): it connects agents and gadgets to
// one notebook of a JSON notes API (tests/gatekeeper/jsonapi serves one). Reads are recorded
// as observations; adding and removing notes are actions applied only after approval. It
// never sees the user's API token: the host adds it to each request. The notes logic is in
// package notes; this file is its component glue.
//
// Build: sdk/build-gadget.sh gatekeepers/notes-go notes.wasm; package it with manifest.json
// (see docs/gatekeepers.md).
package main

import (
	"atelier/gatekeepers/notes-go/notes"
	"atelier/sdk/go/gatekeeper"
	"atelier/sdk/go/host"
)

func init() { gatekeeper.Register(connector{notes.New(componentHost{})}) }

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

// componentHost is notes.Host over the component imports.
type componentHost struct{}

func (componentHost) Fetch(method, url, contentType string, body []byte) (int, []byte, error) {
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

func (componentHost) AuthorizeObservation(title, description string) error {
	return gatekeeper.AuthorizeObservation(gatekeeper.Observation{Title: title, Description: description})
}

func (componentHost) SubmitAction(a notes.Action) (uint64, error) {
	return gatekeeper.SubmitAction(gatekeeper.Action{
		Title: a.Title, Description: a.Description, Kind: gatekeeper.ActionKind(a.Kind),
		AutoApprovable: a.AutoApprovable, ImplementsRevert: a.ImplementsRevert, Payload: a.Payload,
	})
}

func (componentHost) Get(key string) ([]byte, bool, error) { return host.Get(key) }
func (componentHost) Set(key string, value []byte) error   { return host.Set(key, value) }
func (componentHost) Delete(key string) error              { return host.Delete(key) }
func (componentHost) Info(message string)                  { host.Log(host.Info, message) }
