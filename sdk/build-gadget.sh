#!/usr/bin/env bash
# Builds a guest (a gadget or a test guest) from source into a WebAssembly component.
#
#   sdk/build-gadget.sh [--lang go|js|wat] [--world NAME] DIR OUT.wasm
#
# DIR holds the guest's sources and, for go and js, its WIT package in DIR/wit/. Its world may
# `include atelier:gadget/gadget@0.1.0` or import `atelier:host/...` interfaces: the packages of
# the project's wit/ folder are supplied as dependencies. An optional DIR/gadget.json may set
# {"lang": "...", "world": "...", "entry": "..."}; flags win over it.
#   go   DIR is a Go main package (in the atelier module) using //go:wasmimport/wasmexport and
#        atelier/sdk/go/{cabi,host}; built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, then
#        turned into a component with jco and its wasi_snapshot_preview1 reactor adapter.
#   js   DIR holds an ES module (entry: app.js, else index.js); built with componentize-qjs --sync.
#   wat  DIR holds one component in WebAssembly text (*.wat); converted to binary.
# Without --lang the language is read from gadget.json or detected from the files in DIR.
# Without --world the one world declared in DIR/wit/ is used.
#
# Builds are cached by a content hash of everything that goes into them (DIR, the project's
# wit/, sdk/go for Go, this script, the pinned npm tools, the Go version) in sdk/.build/ (or
# $ATELIER_BUILD_CACHE); a hit costs a copy. The npm tools are installed into
# sdk/componentize/node_modules on first use, from the committed package-lock.json, by
# scripts/npm-ci.sh (as scripts/setup.sh installs them: a build after setup does not reinstall).
# Needs: bash, go, node (>= 18) and npm, sha256sum, flock.
set -euo pipefail

die() { echo "build-gadget: $*" >&2; exit 1; }
say() { echo "build-gadget: $*" >&2; }

SDK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$SDK")
TOOLS=$SDK/componentize
CACHE=${ATELIER_BUILD_CACHE:-$SDK/.build}

lang='' world=''
while [ $# -gt 0 ]; do
  case $1 in
    --lang) lang=${2:?--lang needs go, js or wat}; shift 2 ;;
    --world) world=${2:?--world needs a name}; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown flag $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || die "usage: build-gadget.sh [--lang go|js|wat] [--world NAME] DIR OUT.wasm"
[ -d "$1" ] || die "$1: not a directory"
DIR=$(cd "$1" && pwd)
OUT=$2

for tool in node npm sha256sum flock; do
  command -v "$tool" >/dev/null || die "$tool not found: run scripts/setup.sh (needs apt nodejs npm coreutils util-linux)"
done

# gadget.json settings (flags win).
json_field() { [ -f "$DIR/gadget.json" ] && node -e 'const v=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"))[process.argv[2]]; if (v) console.log(v)' "$DIR/gadget.json" "$1" || true; }
[ -n "$lang" ] || lang=$(json_field lang)
[ -n "$world" ] || world=$(json_field world)
entry=$(json_field entry)

if [ -z "$lang" ]; then
  shopt -s nullglob
  go_files=("$DIR"/*.go) js_files=("$DIR"/*.js "$DIR"/*.mjs) wat_files=("$DIR"/*.wat)
  shopt -u nullglob
  found=()
  [ ${#go_files[@]} -gt 0 ] && found+=(go)
  [ ${#js_files[@]} -gt 0 ] && found+=(js)
  [ ${#wat_files[@]} -gt 0 ] && found+=(wat)
  [ ${#found[@]} -eq 1 ] || die "$DIR: cannot tell the language (found: ${found[*]:-no .go, .js or .wat files}); pass --lang"
  lang=${found[0]}
fi

case $lang in
  go) command -v go >/dev/null || die "go not found: run scripts/setup.sh" ;;
  js)
    if [ -z "$entry" ]; then
      for f in app.js index.js; do [ -f "$DIR/$f" ] && { entry=$f; break; }; done
    fi
    [ -n "$entry" ] && [ -f "$DIR/$entry" ] || die "$DIR: no JS entry (app.js, index.js or gadget.json \"entry\")" ;;
  wat)
    shopt -s nullglob; wat_files=("$DIR"/*.wat); shopt -u nullglob
    [ ${#wat_files[@]} -eq 1 ] || die "$DIR: expected exactly one .wat file, found ${#wat_files[@]}"
    entry=$(basename "${wat_files[0]}") ;;
  *) die "unknown language '$lang' (go, js or wat)" ;;
esac

if [ "$lang" != wat ] && [ -z "$world" ]; then
  [ -d "$DIR/wit" ] || die "$DIR: no wit/ folder with the guest's world"
  mapfile -t worlds < <(sed -n 's/^[[:space:]]*world[[:space:]]\+\([a-z][a-z0-9-]*\)[[:space:]]*{.*/\1/p' "$DIR"/wit/*.wit)
  [ ${#worlds[@]} -eq 1 ] || die "$DIR/wit: found ${#worlds[@]} worlds (${worlds[*]:-none}); pass --world"
  world=${worlds[0]}
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time: parallel test processes share the cache and the npm install

# npm tools, installed from the lock file on first use (and again when the lock file changes)
# by the script scripts/setup.sh installs them with, so a build after setup finds them.
"$ROOT/scripts/npm-ci.sh" --quiet "$TOOLS" ||
  die "the npm tools (jco, componentize-qjs; about 340 MB) could not be installed into $TOOLS/node_modules: check access to the npm registry, or run scripts/setup.sh"

# Content hash of every input.
hash_files() { (cd "$1" && find . -type f ! -path './.build/*' ! -name '*.wasm' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); }
key=$(
  {
    echo "lang=$lang world=$world entry=$entry node=$(node --version)"
    sha256sum "$SDK/build-gadget.sh" "$TOOLS/componentize.mjs" "$TOOLS/package-lock.json" | cut -d' ' -f1
    hash_files "$DIR"
    hash_files "$ROOT/wit"
    if [ "$lang" = go ]; then
      go version
      hash_files "$SDK/go"
      sha256sum "$ROOT/go.mod" "$ROOT/go.sum" | cut -d' ' -f1
    fi
  } | sha256sum | cut -c1-16
)
name=$(basename "$DIR")
cached=$CACHE/$name-$lang-$key.wasm

if [ -f "$cached" ]; then
  say "$name ($lang): cached $(basename "$cached")"
else
  tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s%N)
  case $lang in
    go)
      say "$name: go build (GOOS=wasip1 GOARCH=wasm, c-shared)"
      (cd "$DIR" && GOOS=wasip1 GOARCH=wasm go build -trimpath -buildvcs=false -buildmode=c-shared -o "$tmp/core.wasm" .) ||
        die "$name: go build failed"
      say "$name: core module -> component (world $world)"
      node "$TOOLS/componentize.mjs" go "$tmp/core.wasm" "$DIR/wit" "$world" "$ROOT/wit" "$tmp/out.wasm" ||
        die "$name: componentize failed" ;;
    js)
      say "$name: componentize-qjs --sync $entry (world $world)"
      node "$TOOLS/componentize.mjs" js "$DIR/$entry" "$DIR/wit" "$world" "$ROOT/wit" "$tmp/out.wasm" ||
        die "$name: componentize failed" ;;
    wat)
      say "$name: component text -> binary"
      node "$TOOLS/componentize.mjs" wat "$DIR/$entry" - - - "$tmp/out.wasm" || die "$name: parse failed" ;;
  esac
  mv "$tmp/out.wasm" "$cached"
  say "$name ($lang): built $(basename "$cached"), $(stat -c %s "$cached") bytes in $(( ($(date +%s%N) - start) / 1000000 )) ms"
fi

mkdir -p "$(dirname "$OUT")"
cp "$cached" "$OUT.tmp.$$" && mv "$OUT.tmp.$$" "$OUT"
