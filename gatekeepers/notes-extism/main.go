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
	_ "atelier/sdk/go/extism/gatekeeper/hooks" // exports the hook functions
	"atelier/sdk/go/extism/host"
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
