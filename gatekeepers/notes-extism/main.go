//go:build wasip1

// Command notes-extism is the notes gatekeeper of gatekeepers/notes-go built as an Extism
// plugin (manifest "format": "extism") instead of a component: a core module whose plugin
// functions take and return JSON (abi.go has the hand-written Extism ABI; no PDK; exports.go
// the plugin functions). The notes logic is shared with notes-go in package
// atelier/gatekeepers/notes-go/notes; this file supplies its Host over the Extism imports.
//
// Build: gatekeepers/notes-extism/build.sh notes.wasm; package it with manifest.json (see
// docs/gatekeepers.md).
package main

import "atelier/gatekeepers/notes-go/notes"

var gk = notes.New(extismHost{})

func main() {}

// extismHost is notes.Host over the Extism host functions (abi.go).
type extismHost struct{}

func (extismHost) Fetch(method, url, contentType string, body []byte) (int, []byte, error) {
	req := Request{Method: method, URL: url, Body: body}
	if contentType != "" {
		req.Headers = []Header{{Name: "Content-Type", Value: contentType}}
	}
	resp, err := Fetch(req)
	if err != nil {
		return 0, nil, err
	}
	return resp.Status, resp.Body, nil
}

func (extismHost) AuthorizeObservation(title, description string) error {
	return AuthorizeObservation(Observation{Title: title, Description: description})
}

func (extismHost) SubmitAction(a notes.Action) (uint64, error) {
	return SubmitAction(Action{
		Title: a.Title, Description: a.Description, Kind: ActionKind(a.Kind),
		AutoApprovable: a.AutoApprovable, ImplementsRevert: a.ImplementsRevert, Payload: a.Payload,
	})
}

func (extismHost) Get(key string) ([]byte, bool, error) { return KVGet(key) }
func (extismHost) Set(key string, value []byte) error   { return KVSet(key, value) }
func (extismHost) Delete(key string) error              { return KVDelete(key) }
func (extismHost) Info(message string)                  { Log("info", message) }
