// Package e2e holds Atelier's end-to-end tests: they build the atelier binary, run `atelier
// serve` as a subprocess on a temporary data file, and drive it with the official npm capnweb
// client (todo.mjs, using the packages installed in tests/capnweb/node) across a restart of the
// server, then with the atelier CLI itself. Run with `go test ./tests/e2e` (skipped under
// -short); they need go, node and the npm packages that scripts/setup.sh installs.
package e2e
