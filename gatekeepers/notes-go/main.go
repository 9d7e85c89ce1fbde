//go:build wasip1

// Command notes-go is an example gatekeeper (wit/notes.wit): it connects agents and gadgets to
// one notebook of a JSON notes API (tests/gatekeeper/jsonapi serves one). Reads are recorded
// as observations; adding and removing notes are actions applied only after approval. It
// never sees the user's API token: the host adds it to each request. It serves hooks too (the
// gatekeeper-with-hooks world: events note-added, a webhook, and digest, polled). The notes
// logic is in package notes; this file hands it the component SDK's functions.
//
// Build: sdk/build-gadget.sh gatekeepers/notes-go notes.wasm; package it with manifest.json
// (see docs/gatekeepers.md).
package main

import (
	"atelier/gatekeepers/notes-go/notes"
	"atelier/sdk/go/gatekeeper"
	_ "atelier/sdk/go/gatekeeper/hooks" // exports the hooks interface
	"atelier/sdk/go/host"
)

func init() {
	gatekeeper.Register(notes.New(notes.Host{
		Fetch:                gatekeeper.Fetch,
		AuthorizeObservation: gatekeeper.AuthorizeObservation,
		SubmitAction:         gatekeeper.SubmitAction,
		Get:                  host.Get,
		Set:                  host.Set,
		Delete:               host.Delete,
		Info:                 func(message string) { host.Log(host.Info, message) },
	}))
}

func main() {}
