#!/usr/bin/env bash
# Runs every benchmark of a build folder and prints its table (see docs/PERFORMANCE.md).
set -euo pipefail
build=${1:-build}
echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date: $(date -u +%Y-%m-%d)"
for b in "$build"/bench/*; do
  [ -f "$b" ] && [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_min_time=0.5 2>&1 | grep -vE '^\*\*\*WARNING|^Load Average|^CPU Caches|^  L[123]|^Run on|^[0-9-]+T'
done
