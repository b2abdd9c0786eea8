#!/usr/bin/env bash
# Installs a build into a temporary prefix, builds tests/install/consumer against it with
# find_package(rerace), runs it.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/rerace"
test -f "$tmp/prefix/share/rerace/trace.capnp"
test -f "$tmp/prefix/share/rerace/python/rerace_probe/__init__.py"
cmake -S "$src/consumer" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
(cd "$tmp" && "$tmp/build/consumer")
"$tmp/prefix/bin/rerace" --help >/dev/null
