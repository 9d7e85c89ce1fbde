// Package authoring is the end-to-end test of the authoring kit: for every template of
// `atelier new` (gadgets in Go, JS, TS and C; gatekeepers), a project made outside the
// repository builds with `atelier build`, deploys to a real `atelier serve` and answers a call.
// Run it with `go test ./tests/authoring` (set ATELIER_AUTHORING_COLD=1 to start from empty
// tool caches, which downloads the npm tools from the registry).
package authoring
