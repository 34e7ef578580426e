#!/usr/bin/env bash
# Installs what memplace needs on a Debian machine: the ARM toolchain, QEMU and a host C
# compiler (for the planner's compiled core) from Debian,
# then a virtual environment in .venv with memplace and its Python dependencies.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_cmd python3 || need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
have_cmd arm-none-eabi-gcc || need+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/lib/libc.a ] || need+=(libnewlib-arm-none-eabi)
# C++ in generated projects (libstdc++, its nano variant, exceptions).
[ -f /usr/lib/arm-none-eabi/lib/libstdc++.a ] || need+=(libstdc++-arm-none-eabi-newlib)
have_cmd qemu-system-arm || need+=(qemu-system-arm)
have_cmd make || need+=(make)
# The planner's compiled core is built by `pip install` with the host's C compiler.
have_cmd cc || need+=(gcc libc6-dev)

if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "memplace setup: installing Debian packages: ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

stamp=.venv/.memplace-installed
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "memplace setup: creating .venv with memplace and its dependencies"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev,tvm]'
  touch "$stamp"
fi
