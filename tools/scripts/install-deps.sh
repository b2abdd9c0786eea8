#!/usr/bin/env bash
# Installs the Debian packages the build needs, when they are missing. Safe to run again.
set -euo pipefail
need=(cmake ninja-build g++ pkg-config libboost-context-dev capnproto libcapnp-dev libcli11-dev
      libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev)
[ "${RERACE_FUZZ:-0}" = 1 ] && need+=(clang libclang-rt-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Triton 3.6 (its real autotuner, run with a fake kernel, backs the probe's tests).
if ! python3 -c 'import triton, sys; sys.exit(triton.__version__ != "3.6.0")' 2>/dev/null; then
  echo "install-deps: installing triton==3.6.0 from PyPI (for the probe's tests)"
  python3 -m pip install --quiet --disable-pip-version-check triton==3.6.0 ||
    echo "install-deps: triton not installed; the probe's tests will skip"
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
