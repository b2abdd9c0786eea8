#!/usr/bin/env bash
# The recorder's checks on a GPU machine (run through the device tool; see docs/RECORDER.md).
# Expects binaries built on the build machine under .devrun/{bin,lib,tests} and their shared
# libraries (Cap'n Proto, fmt, Boost.Context) under .devlibs; writes logs and traces to $OUT.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
{
  echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -1; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "== gtest (label gpu)"
  RERACE_BIN=$bin .devrun/tests/gpu_record_test
  echo "== torch: launches from two threads, marks through torch.cuda.nvtx.mark"
  (cd "$out" && "$bin/rerace" record -o torch.rrt -- python3 "$OLDPWD/tests/recorder/torch_step.py")
  for f in "$out"/torch*.rrt; do "$bin/rerace" show "$f" | grep -vE '^      device' | head -40; done
  echo "== overhead: 8 threads x 20000 tiny kernels, 3 runs each"
  for i in 1 2 3; do
    "$bin/gpu_launches" --threads 8 --launches 20000 | sed 's/^/plain:    /'
    (cd "$out" && "$bin/rerace" record -o ovh.rrt -- "$bin/gpu_launches" --threads 8 --launches 20000 2>&1 | sed 's/^/recorded: /')
    rm -f "$out"/ovh*.rrt
  done
  echo "== overhead: the torch step, plain / recorded / torch.profiler, 3 runs each"
  for i in 1 2 3; do
    python3 tests/recorder/torch_step.py --iters 400 | sed 's/^/plain:    /'
    (cd "$out" && "$bin/rerace" record -o tovh.rrt -- python3 "$OLDPWD/tests/recorder/torch_step.py" --iters 400 2>&1 | sed 's/^/recorded: /')
    python3 tests/recorder/torch_step.py --iters 400 --profile 2>/dev/null | sed 's/^/profiler: /'
    rm -f "$out"/tovh*.rrt
  done
} 2>&1 | tee "$out/h200-recorder.log"
