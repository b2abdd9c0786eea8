#!/usr/bin/env bash
# The real-code engine's verdicts on the H200 recordings of the brief's experiment, beside
# what the H200 did (docs/gpu-logs/h200-patched-2026-12-03.log): one row per variant, GIL mode with the
# recording's interpreter version (CPython 3.12) and free-threaded, and the C++ model's.
# Each engine check: bounded search at bound 1 (MAX_RUNS runs), then MAX_RUNS sampled schedules.
# Usage: tools/scripts/fidelity-python.sh [RERACE] [PYTHON] [MAX_RUNS]
set -uo pipefail
rerace=${1:-build/bin/rerace}
py=${2:-build/py/venv312/bin/python}
runs=${3:-100}
s=traces/samples
verdict() {  # "holds (N explored)" or "FAILS after N: code type" from a check's output
  local out; out=$(cat)
  if grep -q '^verdict: .* holds' <<<"$out"; then
    echo "holds ($(grep -o '([0-9,]* explored' <<<"$out" | head -1 | tr -d '(') bounded, then sampled)"
  elif grep -q '^verdict: .* FAILS' <<<"$out"; then
    echo "FAILS after $(grep -o 'after [0-9,]* schedules' <<<"$out" | head -1 | cut -d' ' -f2): $(grep -m1 '^FAILED: ' <<<"$out" | cut -d' ' -f2) $(grep -m1 -oE '^  [A-Za-z]+Error' <<<"$out" | tr -d ' ')"
  else
    echo "refused: $(grep -m1 'error' <<<"$out" | cut -c1-60)"
  fi
}
printf '| variant | trace | real (H200, 8 trials) | GIL (%s) | free-threaded | C++ model |\n|---|---|---|---|---|---|\n' \
  "$("$py" -c 'import sys; print("CPython %d.%d" % sys.version_info[:2])')"
row() {  # row NAME TRACE REAL ARGS...
  local name=$1 trace=$2 real=$3; shift 3
  local gil free model
  gil=$("$rerace" check "$trace" --engine python --python-exe "$py" --python gil --max-runs "$runs" --runs "$runs" "$@" 2>&1 | verdict)
  free=$("$rerace" check "$trace" --engine python --python-exe "$py" --python free-threaded --max-runs "$runs" --runs "$runs" "$@" 2>&1 | verdict)
  model=$("$rerace" check "$trace" --model triton "$@" 2>&1 | verdict)
  printf '| %s | `%s` | %s | %s | %s | %s |\n' "$name" "$(basename "$trace")" "$real" "$gil" "$free" "$model"
}
row none $s/triton-none-h200.rrt "8 of 8 failed (KeyError, 7 of 8 threads)"
row "lock-run (recorded patch)" $s/triton-lock-run-patched-h200.rrt "0 of 8"
row "tls-nargs (recorded patch)" $s/triton-tls-nargs-patched-h200.rrt "8 of 8 failed (KeyError, 7 of 8 threads)"
row "tls-state (recorded patch)" $s/triton-tls-state-patched-h200.rrt "0 of 8"
row "lock-key-event (recorded patch)" $s/triton-lock-key-event-patched-h200.rrt "0 of 8; storm 0 errors"
row "prewarm (--fix prewarm)" $s/triton-none-h200.rrt "0 of 8; storm of 96,000 cached calls: 0 errors" --fix prewarm
