#!/usr/bin/env bash
# Issue 18, second measurement (through the device tool, from the repository root, with
# .devrun/.devlibs as h200-recorder-check.sh; log to $OUT/h200-cost2.log): (1) the native step's call-local at 1/2/4/8 threads and lock-run
# at 1/8 threads (8 runs each, step 0): do eight concurrent tunings serialize? (2) the Triton
# experiment's cold trial (a fresh process each, --trials 1) 8 times per variant, the
# counterpart of a recording (which is a process's first trial).
set -uo pipefail
. tools/scripts/h200-env.sh
exp=$PWD/tools/experiments
{
echo "== machine ($(date -u +%FT%TZ))"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import platform, torch, triton; print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__)'
for spec in "call-local 1" "call-local 2" "call-local 4" "call-local 8" "lock-run 1" "lock-run 8" "per-thread-tuner 1"; do
  set -- $spec
  for i in $(seq 8); do
    o=$(timeout 60 "$bin/rerace-train-step" --threads "$2" --steps 1 --fix "$1" --seed "$i" 2>&1)
    echo "native fix=$1 threads=$2 run=$i rc=$? failures=$(echo "$o" | sed -n 's/^failures: //p') $(echo "$o" | grep -E '^step 0' | tr '\n' ' ')"
  done
done
echo "== compile once"; timeout 300 python3 "$exp/autotune_race.py" --variant lock-run --trials 1 --quiet | tail -1
for v in lock-run tls-state; do
  for i in $(seq 8); do
    echo "cold $v run=$i $(timeout 100 python3 "$exp/autotune_race.py" --variant "$v" --trials 1 --quiet 2>&1 | grep -E '^trial' | tr '\n' ' ')"
  done
done
echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | tee "$out/h200-cost2.log"
