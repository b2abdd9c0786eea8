#!/usr/bin/env bash
# Issue 18, third measurement: do concurrent Python trials slow each other (the host under the
# GIL)? Through the device tool, from the repository root, with .devrun/.devlibs as
# h200-recorder-check.sh; log to $OUT/h200-cost3.log, recordings to $OUT/t.
#   1. The Triton experiment's cold trial (a fresh process each, --trials 1, after one compiling
#      run), RUNS times per (variant, threads): lock-run at 8 threads (tuning serialized), tls-state
#      (every thread tunes, each its own state) at 1, 2, 4 and 8 threads (SPECS: which).
#   2. One recording of each (cold), and of the unpatched run at 8 threads:
#      triton-V-tN-cost3-h200.rrt (RECS: which).
set -uo pipefail
. tools/scripts/h200-env.sh
exp=$PWD/tools/experiments
RUNS=${RUNS:-6} tag=${TAG:-cost3}  # TAG names the log and the recordings
mkdir -p "$out/t"
{
echo "== machine ($(date -u +%FT%TZ))"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import platform, torch, triton; print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__)'
echo "== compile once"; timeout 300 python3 "$exp/autotune_race.py" --variant lock-run --trials 1 --quiet | tail -1
IFS=, read -ra specs <<< "${SPECS:-lock-run 8,tls-state 8,tls-state 4,tls-state 2,tls-state 1}"
IFS=, read -ra recs <<< "${RECS:-none 8,lock-run 8,tls-state 8,tls-state 4,tls-state 2}"
for spec in "${specs[@]}"; do
  set -- $spec
  for i in $(seq "$RUNS"); do
    echo "cold $1 threads=$2 run=$i $(timeout 100 python3 "$exp/autotune_race.py" --variant "$1" --threads "$2" --trials 1 --quiet 2>&1 | grep -E '^trial' | tr '\n' ' ')"
  done
done
for spec in "${recs[@]}"; do
  set -- $spec
  (cd "$out/t" && timeout 200 "$bin/rerace" record --probe triton -o "triton-$1-t$2-$tag-h200.rrt" -- python3 "$exp/autotune_race.py" --variant "$1" --threads "$2" --trials 1 --quiet 2>&1 | grep -E '^trial|rerace:' | sed "s/^/recorded triton $1 threads=$2: /")
done
ls -l "$out/t"
echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | tee "$out/h200-$tag.log"
