#!/usr/bin/env bash
# Builds the notes gatekeeper as an Extism plugin: a core module for GOOS=wasip1 in reactor
# (c-shared) mode, with the Extism ABI of atelier/sdk/go/extism.
#
#   gatekeepers/notes-extism/build.sh OUT.wasm
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: build.sh OUT.wasm" >&2; exit 2; }
out=$(realpath -m "$1")
cd "$(dirname "${BASH_SOURCE[0]}")"
GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -buildmode=c-shared -o "$out" .
