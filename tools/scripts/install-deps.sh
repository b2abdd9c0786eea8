#!/usr/bin/env bash
# Installs the Debian packages the build needs, when they are missing. Safe to run again.
set -euo pipefail
need=(cmake ninja-build g++ pkg-config libboost-context-dev capnproto libcapnp-dev libcli11-dev
      libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev xz-utils)
[ "${RERACE_FUZZ:-0}" = 1 ] && need+=(clang libclang-rt-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Python and Triton live in the build tree (tools/scripts/python-envs.sh), not here.
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-venv)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
