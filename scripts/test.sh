#!/usr/bin/env bash
# Runs every test of Atelier: formatting and vet, the Go tests (among them the interop tests
# against the official npm capnweb client, the end-to-end and crash tests against a real
# `atelier serve`, the gatekeepers against a real loopback service, and the browser shell in
# headless Chromium: tests/browser, whose screenshots land in tests/browser/artifacts or
# $ATELIER_ARTIFACTS), the race detector on the concurrent packages, and a short fuzzing pass
# over each fuzz target. Installs what a fresh machine lacks first.
#
#   scripts/test.sh             everything (about 5 minutes on 2 cores with warm caches)
#   FUZZTIME=0 scripts/test.sh  skip the fuzzing pass (seed corpora still run as tests)
#   FUZZTIME=1m scripts/test.sh fuzz each target longer (a -fuzztime value)
set -euo pipefail
cd "$(dirname "$0")/.."
unset RUST_BACKTRACE

step() { printf '==> %s\n' "$*"; }

scripts/setup.sh --deps

step "gofmt"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard -- '*.go'))
if [ -n "$unformatted" ]; then
  printf 'gofmt would change:\n%s\n' "$unformatted" >&2
  exit 1
fi

step "go vet"
go vet ./...

step "go test"
go test -count=1 -timeout 20m ./...

step "go test -race (Cap'n Web, capabilities, value conversion, store, auth, metrics, gatekeepers, kernel, cluster, agent)"
go test -count=1 -race -timeout 10m ./capnweb/... ./host/capability/... ./host/runtime/wit ./host/store ./host/auth ./host/metrics ./host/gatekeeper/... ./host/kernel ./host/cluster ./host/agent/...

# The budget is a count of executions, not a duration: Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" when a duration budget ends while a worker is
# mid-call (go.dev/issue/75804, fixed in Go 1.27). 50,000 executions is 3-15 s per target here.
fuzztime=${FUZZTIME:-50000x}
if [ "$fuzztime" != 0 ]; then
  # Each fuzz target runs for a short while on top of its seed corpus.
  while read -r pkg target; do
    step "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | while read -r f; do
      pkg="./$(dirname "${f#./}")"
      grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$f" | awk -v p="$pkg" '{print p, $2}'
    done | sort -u)
fi
step "all tests passed"
