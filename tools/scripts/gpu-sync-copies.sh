#!/usr/bin/env bash
# On a GPU machine, from the repository root, in one device command: the steps of issues 52 and
# 53 recorded with the present probe (the program's synchronization, tuner identity), each
#   rerace record --probe triton -o triton-NAME-GPU.rrt -- \
#       python3 tools/experiments/autotune_race.py ARGS --trials 1
# for NAME:ARGS in prewarm-sync:"--variant prewarm" (each thread's call once, serially, ordered
# by threading.Events, then the barrier and 8 concurrent cached calls), warmup-sync:"--warmup"
# (the main thread's call before it starts the workers) and copies:"--copies" (each worker calls
# its own copy.copy of the tuner). Then `rerace show` of each. Traces and logs in $OUT.
# Carry [".devrun", ".devlibs"] (tools/scripts/h200-gpu-settle.sh --prepare made them: the
# recorder needs no change for these marks, the probe is copied from this checkout).
set -u
root=$PWD
out=${OUT:-$root/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.devlibs:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p .devrun/share/rerace/python && rm -rf .devrun/share/rerace/python/rerace_probe
cp -r recorder/python/rerace_probe .devrun/share/rerace/python/
bin=$root/.devrun/bin
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE 'h100|h200|a100|b200' | tr A-Z a-z)
gpu=${gpu:-gpu}
{
  echo "== gpu-sync-copies ($(date -u +%FT%TZ)) at $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import sys, platform, torch, triton; print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__)'
  for spec in "prewarm-sync:--variant prewarm" "warmup-sync:--warmup" "copies:--copies"; do
    name=${spec%%:*}; args=${spec#*:}
    echo "== record $name ($args)"
    (cd "$out" && timeout 150 "$bin/rerace" record --probe triton -o "triton-$name-$gpu.rrt" -- \
        python3 "$root/tools/experiments/autotune_race.py" $args --trials 1 2>&1 | tail -12)
    # The recorder names the file after the process it recorded (triton-NAME-GPU.pidN.rrt).
    trace=$(ls "$out"/triton-"$name"-"$gpu"*.rrt 2>/dev/null | head -1)
    "$bin/rerace" show "${trace:-$out/triton-$name-$gpu.rrt}" 2>&1 | head -14
  done
} 2>&1 | tee "$out/gpu-sync-copies.log"
