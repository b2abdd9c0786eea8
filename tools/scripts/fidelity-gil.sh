#!/usr/bin/env bash
# The C++ model's verdict for each named fix on the brief's experiment (the H200 recording
# triton-none-h200.rrt, CPython 3.12.3 with the GIL), under the GIL (the model's steps cut where
# CPython 3.12 can hand the GIL over, replay/model/include/rerace/replay/model/tuner_world_gil.h) and free-threaded (every
# access a step), beside the H200's real runs (docs/gpu-logs/h200-patched-2026-12-03.log) and the
# real-code engine's verdict in the same two modes (--engine python with the fix's patch file).
# Model checks: `check` with its defaults; engine checks: bound 1 for MAX_RUNS runs, then
# MAX_RUNS sampled schedules.
# Usage: tools/scripts/fidelity-gil.sh [RERACE] [PYTHON] [MAX_RUNS]   (PYTHON "" : model only)
set -uo pipefail
rerace=${1:-build/bin/rerace}
py=${2-build/py/venv312/bin/python}
runs=${3:-30}
trace=traces/samples/triton-none-h200.rrt
verdict() {  # "holds (N explored)" or "FAILS after N: code type" from a check's output
  local out; out=$(cat)
  if grep -q '^verdict: .* holds' <<<"$out"; then
    echo "holds ($(grep -o '([0-9,]* explored' <<<"$out" | head -1 | tr -d '(') bounded, then sampled)"
  elif grep -q '^verdict: .* FAILS' <<<"$out"; then
    echo "FAILS after $(grep -o 'after [0-9,]* schedules' <<<"$out" | head -1 | cut -d' ' -f2): $(grep -m1 '^FAILED: ' <<<"$out" | cut -d' ' -f2) $(grep -m1 -oE '^  [A-Za-z]+Error' <<<"$out" | tr -d ' ')"
  else
    echo "error: $(grep -m1 'error' <<<"$out" | cut -c1-60)"
  fi
}
echo '| fix | real (H200, CPython 3.12.3, GIL) | model, GIL (3.12) | model, free-threaded | real code, GIL | real code, free-threaded |'
echo '|---|---|---|---|---|---|'
row() {  # row FIX REAL
  local fix=$1 real=$2 gil free egil efree
  gil=$("$rerace" check "$trace" --fix "$fix" --python gil --python-version 3.12 2>&1 | verdict)
  free=$("$rerace" check "$trace" --fix "$fix" --python free-threaded 2>&1 | verdict)
  if [[ -n "$py" ]]; then
    egil=$("$rerace" check "$trace" --engine python --python-exe "$py" --python gil --fix "$fix" --max-runs "$runs" --runs "$runs" 2>&1 | verdict)
    efree=$("$rerace" check "$trace" --engine python --python-exe "$py" --python free-threaded --fix "$fix" --max-runs "$runs" --runs "$runs" 2>&1 | verdict)
  else
    egil="(not run)"; efree="(not run)"
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$fix" "$real" "$gil" "$free" "$egil" "$efree"
}
row none "8 of 8 failed (KeyError, 7 of 8 threads)"
row tls-nargs "8 of 8 failed (KeyError, 7 of 8 threads)"
row lock-run "0 of 8"
row tls-state "0 of 8"
row lock-key-event "0 of 8; storm 0 errors"
row prewarm "0 of 8; storm of 96,000 cached calls: 0 errors"
