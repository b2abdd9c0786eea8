#!/usr/bin/env bash
# The Triton probe on a GPU machine (through the device tool): records the brief's experiment
# unpatched, with a lock around Autotuner.run and with thread-local nargs; runs the same
# variants without the recorder for the fidelity table; times the step plain, recorded and under
# torch.profiler. Writes logs and traces to $OUT.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
exp=$PWD/tools/experiments/autotune_race.py
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  python3 "$exp" --variant none --trials 1 >/dev/null 2>&1  # compile the kernels once
  for v in ${VARIANTS:-none lock-run tls-nargs}; do
    for n in $(seq 1 "${RECORDINGS:-1}"); do
      echo "== recorded: $v ($n)"
      (cd "$out" && "$bin/rerace" record --probe triton -o "triton-$v-$n.rrt" -- python3 "$exp" --variant "$v" --trials 1)
      "$bin/rerace" show "$out"/triton-$v-$n.*.rrt | grep -vE '^      device' | head -30
      "$bin/rerace" replay "$out"/triton-$v-$n.*.rrt --recorded | grep -E "FAILED|also|summary|^ok|note"
    done
  done
  [ "${RECORD_ONLY:-0}" = 1 ] && exit 0
  echo "== fidelity, no recorder"
  python3 "$exp" --variant none --trials 10
  python3 "$exp" --variant lock-run --trials 5
  python3 "$exp" --variant tls-nargs --trials 10
  echo "== overhead (lock-run, 3 trials each): plain / recorded with the probe / torch.profiler"
  python3 "$exp" --variant lock-run --trials 3 | sed 's/^/plain:    /'
  (cd "$out" && "$bin/rerace" record --probe triton -o ovh.rrt -- python3 "$exp" --variant lock-run --trials 3 2>&1 | sed 's/^/recorded: /'; rm -f ovh.*.rrt)
  python3 "$exp" --variant lock-run --trials 3 --profile 2>/dev/null | sed 's/^/profiler: /'
} 2>&1 | tee "$out/h200-triton.log"
