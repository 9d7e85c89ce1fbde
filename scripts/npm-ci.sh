#!/usr/bin/env bash
# Installs the npm packages of each DIR from its committed package-lock.json (npm ci), unless
# DIR/node_modules already holds exactly that lock: after an install it keeps a copy of the
# lock it installed as node_modules/.atelier-lock, and an install runs again only when that
# copy is missing or differs (the lock changed, or node_modules was made by hand).
# scripts/setup.sh and sdk/build-gadget.sh both install through it, so a build after setup
# does not install again.
#
#   scripts/npm-ci.sh [--quiet] DIR...     (--quiet: say nothing of a folder that is up to date)
set -euo pipefail

quiet=''
[ "${1:-}" = --quiet ] && { quiet=1; shift; }
for dir in "$@"; do
  [ -f "$dir/package-lock.json" ] || { echo "npm-ci: $dir has no package-lock.json" >&2; exit 1; }
  if cmp -s "$dir/package-lock.json" "$dir/node_modules/.atelier-lock" 2>/dev/null; then
    [ -n "$quiet" ] || echo "npm-ci: $dir/node_modules is up to date" >&2
    continue
  fi
  echo "npm-ci: installing npm packages in $dir from its package-lock.json" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
    { echo "npm-ci: npm ci in $dir failed: check access to the npm registry, then run again" >&2; exit 1; }
  cp "$dir/package-lock.json" "$dir/node_modules/.atelier-lock"
done
