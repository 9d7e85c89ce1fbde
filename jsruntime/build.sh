#!/usr/bin/env bash
# Rebuilds the JS engine components that package jsruntime embeds:
#
#   jsruntime/build.sh           -> jsruntime/engine/snippet.wasm and jsruntime/engine/gadget.wasm
#   jsruntime/build.sh --check   rebuilds twice in fresh folders and fails unless both builds
#                                are byte-identical to each other and to the committed files
#
# Inputs, all pinned:
#   - QuickJS 2025-04-26 C sources: Debian trixie source package quickjs 2025.04.26-1 (MIT),
#     fetched with apt-get through a temporary deb-src entry; the orig tarball's sha256 is
#     checked (and the tarball is cached in jsruntime/engine/.build/).
#   - Debian bookworm's clang-14, lld-14, wasi-libc and libclang-rt-14-dev-wasm32 (installed
#     with apt-get when missing; their versions are printed).
#   - The project's pinned npm tools in sdk/componentize, installed with `npm ci` from its
#     package-lock.json: Wizer 10.0.0 (snapshots the engine after its start, so that instances
#     begin with QuickJS ready) and jco 1.35.0 (wasm-tools `component embed` + `component new`).
#   - Our glue, engine/engine.c and engine/glue.js, and the worlds in wit/js/ and wit/host/.
#
# The one change to the QuickJS sources: Atomics is compiled out (it needs pthreads, which
# WASI preview1 libc does not have). Everything is compiled with fixed flags, no timestamps and
# -ffile-prefix-map, so the output does not depend on the folder or the time of the build.
set -euo pipefail

die() { echo "jsruntime/build: $*" >&2; exit 1; }
say() { echo "jsruntime/build: $*" >&2; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
ENGINE=$HERE/engine
CACHE=$ENGINE/.build
TOOLS=$ROOT/sdk/componentize

QJS_VERSION=2025.04.26-1
QJS_ORIG=quickjs_2025.04.26.orig.tar.xz
QJS_SHA256=ec81da5b3249ed648dbc7df4a1654988910e66a118d9b71cb63534216efcfbbe
CC=clang-14
CLANG_RESOURCE=/usr/lib/llvm-14/lib/clang/14.0.6
STACK=1048576 # bytes of wasm shadow stack; QuickJS's stack limit stays below it (engine.c)

install_tools() {
  local missing=()
  command -v $CC >/dev/null || missing+=(clang-14)
  command -v wasm-ld-14 >/dev/null || missing+=(lld-14)
  [ -d /usr/include/wasm32-wasi ] || missing+=(wasi-libc)
  [ -f $CLANG_RESOURCE/lib/wasi/libclang_rt.builtins-wasm32.a ] || missing+=(libclang-rt-14-dev-wasm32)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed (apt-get install nodejs npm)"
  "$ROOT/scripts/npm-ci.sh" --quiet "$TOOLS" # as scripts/setup.sh and sdk/build-gadget.sh do
}

# fetch_quickjs unpacks the checked QuickJS sources into $CACHE/quickjs.
fetch_quickjs() {
  mkdir -p "$CACHE"
  if [ ! -f "$CACHE/$QJS_ORIG" ]; then
    say "fetching Debian source package quickjs $QJS_VERSION (trixie)"
    local mirror list tmp
    mirror=$(grep -rhoE 'https?://[^ ]+/debian\b' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null | grep -v snapshot | sed -n 1p || true)
    [ -n "$mirror" ] || die "no Debian mirror in the apt sources"
    list=/etc/apt/sources.list.d/atelier-quickjs-src.sources
    printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" >"$list"
    tmp=$(mktemp -d)
    local ok=0
    apt-get update -qq && (cd "$tmp" && apt-get source --download-only "quickjs=$QJS_VERSION" >/dev/null 2>&1) && ok=1
    rm -f "$list"
    apt-get update -qq || true # leave apt as it was
    [ $ok = 1 ] || die "apt-get source quickjs=$QJS_VERSION failed"
    mv "$tmp/$QJS_ORIG" "$CACHE/$QJS_ORIG"
    rm -rf "$tmp"
  fi
  echo "$QJS_SHA256  $CACHE/$QJS_ORIG" | sha256sum -c --quiet - || die "$QJS_ORIG: sha256 mismatch"
  rm -rf "$CACHE/quickjs"
  mkdir -p "$CACHE/quickjs"
  tar xJf "$CACHE/$QJS_ORIG" -C "$CACHE/quickjs" --strip-components=1
}

# build OUTDIR compiles QuickJS and the glue, links the two core modules and wraps each into a
# component: OUTDIR/snippet.wasm and OUTDIR/gadget.wasm.
build() {
  local out=$1 q=$CACHE/quickjs obj
  obj=$(mktemp -d)
  # Atomics off: the guard of its #define is the first `#if !defined(EMSCRIPTEN)` of the file.
  sed '0,/^#if !defined(EMSCRIPTEN)$/s//#if !defined(EMSCRIPTEN) \&\& !defined(__wasi__)/' "$q/quickjs.c" >"$obj/quickjs.c"
  grep -q 'define CONFIG_ATOMICS' "$obj/quickjs.c" || die "quickjs.c: CONFIG_ATOMICS not found"
  local cflags=(--target=wasm32-wasi -nostdinc -isystem "$CLANG_RESOURCE/include" -isystem /usr/include/wasm32-wasi
    -O2 -DCONFIG_VERSION=\"2025-04-26\" -include malloc.h -w -I"$q" -I"$ENGINE/shim" -I"$obj"
    -ffile-prefix-map="$obj"=. -ffile-prefix-map="$q"=quickjs -ffile-prefix-map="$ENGINE"=engine)
  # glue.js becomes a C string (glue.h).
  node -e 'const s=require("fs").readFileSync(process.argv[1]); process.stdout.write("static const char glue_js[] = {" + [...s, 0].join(",") + "};\n")' \
    "$ENGINE/glue.js" >"$obj/glue.h"
  local pids=() f src
  for f in quickjs dtoa libregexp libunicode cutils; do
    src=$q/$f.c
    [ $f = quickjs ] && src=$obj/quickjs.c
    $CC "${cflags[@]}" -c "$src" -o "$obj/$f.o" &
    pids+=($!)
  done
  for f in snippet gadget; do
    $CC "${cflags[@]}" -Wall -Werror -DENGINE_$(echo $f | tr a-z A-Z) -DENGINE_STACK=$STACK -c "$ENGINE/engine.c" -o "$obj/engine-$f.o"
  done
  for p in "${pids[@]}"; do wait "$p" || die "compiling QuickJS failed"; done
  mkdir -p "$out"
  for f in snippet gadget; do
    $CC --target=wasm32-wasi -mexec-model=reactor -O2 -nostdlib++ \
      -Wl,--stack-first -Wl,-z,stack-size=$STACK -Wl,--strip-all \
      "$obj"/{quickjs,dtoa,libregexp,libunicode,cutils}.o "$obj/engine-$f.o" -o "$obj/$f.core.wasm"
    # Snapshot the started engine (runtime, context, glue.js) into the module's memory.
    node "$TOOLS/node_modules/@bytecodealliance/wizer/wizer.js" -o "$obj/$f.init.wasm" "$obj/$f.core.wasm"
    node "$TOOLS/componentize.mjs" go "$obj/$f.init.wasm" "$ROOT/wit/js" "$f" "$ROOT/wit" "$out/$f.wasm"
  done
  rm -rf "$obj"
}

install_tools
fetch_quickjs
say "clang: $($CC --version | head -1); wasi-libc $(dpkg-query -W -f '${Version}' wasi-libc 2>/dev/null || echo '?')"

if [ "${1:-}" = --check ]; then
  a=$(mktemp -d) b=$(mktemp -d)
  build "$a"
  build "$b"
  for f in snippet gadget; do
    cmp "$a/$f.wasm" "$b/$f.wasm" || die "$f.wasm differs between two builds"
    cmp "$a/$f.wasm" "$ENGINE/$f.wasm" || die "$f.wasm differs from the committed engine/$f.wasm"
  done
  sha256sum "$a"/*.wasm | sed "s|$a/||"
  rm -rf "$a" "$b"
  say "two builds are identical to the committed engine"
  exit 0
fi
build "$ENGINE"
(cd "$ENGINE" && sha256sum snippet.wasm gadget.wasm && ls -l snippet.wasm gadget.wasm) >&2
