// Package atelier holds the repository files that the atelier binary carries to projects outside
// the repository (atelier new, atelier build): the WIT packages guests build against and the
// guest-side sources. It sits at the module root because //go:embed never leaves a package's
// folder; sdk/templates reads it.
package atelier

import "embed"

// Sources holds wit/{host,gadget,gatekeeper}, sdk/componentize's npm manifest, lock file and
// componentize.mjs, and the Go guest packages sdk/go/{cabi,host,gatekeeper,connector,loglevel} and sdk/go/extism
// (with its gatekeeper and host), at their paths in the repository.
//
//go:embed wit/host wit/gadget wit/gatekeeper
//go:embed sdk/componentize/package.json sdk/componentize/package-lock.json sdk/componentize/componentize.mjs
//go:embed sdk/go/cabi/*.go sdk/go/host/*.go sdk/go/gatekeeper/*.go sdk/go/connector/*.go sdk/go/loglevel/*.go
//go:embed sdk/go/extism/*.go sdk/go/extism/gatekeeper/*.go sdk/go/extism/host/*.go
var Sources embed.FS
