#!/usr/bin/env bash
# Installs everything Atelier needs on a fresh Debian machine with Go 1.26 and Node 20, then
# builds bin/atelier. Safe to run again: each step skips work that is already done.
#
#   scripts/setup.sh            install tools and npm packages, build bin/atelier
#   scripts/setup.sh --deps     install tools and npm packages only
set -euo pipefail
cd "$(dirname "$0")/.."
unset RUST_BACKTRACE

step() { printf '==> %s\n' "$*"; }
fail() { printf 'setup: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || fail "Go 1.26 is not installed (https://go.dev/dl/); install it and run again"
command -v node >/dev/null || fail "Node.js 20 is not installed; install it (apt-get install nodejs npm) and run again"

# Debian packages the build and the tests use. Empty lines and comments are ignored.
apt_packages=(
  gcc               # cgo: Wasmtime's C API is linked statically into bin/atelier
  chromium          # tests/browser drives the browser shell in headless Chromium
  fonts-liberation  # so that the browser tests' screenshots have text
  jq                # docs/gatekeepers.md packs a gatekeeper by hand with it (tests/docs runs that)
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# npm packages, each folder pinned by its package-lock.json; scripts/npm-ci.sh skips a folder
# whose node_modules holds that lock already (sdk/build-gadget.sh checks the same way).
step "npm packages (sdk/componentize, tests/capnweb/node, host/shell/web, tests/mcpservers)"
scripts/npm-ci.sh sdk/componentize tests/capnweb/node host/shell/web tests/mcpservers

step "downloading Go modules"
go mod download

# The browser shell's bundle, embedded into bin/atelier (and needed by the tests that build it).
if [ ! -f host/shell/dist/shell.js ] || [ -n "$(find host/shell/web/src host/shell/web/node_modules/.package-lock.json host/shell/build -newer host/shell/dist/shell.js -print -quit)" ]; then
  step "bundling the browser shell (host/shell/dist)"
  go run ./host/shell/build
fi

[ "${1:-}" = "--deps" ] && exit 0

step "building bin/atelier"
go build -o bin/atelier ./cmd/atelier
step "done: bin/atelier $(bin/atelier version 2>/dev/null || true)"
