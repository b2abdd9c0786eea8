#!/usr/bin/env bash
# The native workload on a GPU machine (issue 6; run through the device tool): the kernels'
# GPU tests, the real outcome of each fix over N runs, recordings for traces/samples, step
# times per fix, the recorder's overhead on steady training steps, and the launch rate.
# Expects binaries under .devrun/{bin,lib,tests} and shared libraries under .devlibs (see
# h200-recorder-check.sh); writes logs and traces to $OUT.
#   RUNS=10 (per fix)   FIXES="none lock-run ..."
#   SECTIONS="tests outcomes recordings speed overhead" (default: all)
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
mkdir -p "$out/traces"
runs=${RUNS:-10}
fixes=${FIXES:-none lock-run tls-nargs call-local lock-key-future per-thread-tuner prewarm owner-thread}
step="$bin/rerace-train-step --threads 8 --steps 1"
sections=${SECTIONS:-tests outcomes recordings speed overhead}
on() { case " $sections " in *" $1 "*) return 0;; esac; return 1; }
{
  echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -1; date -u
  if on tests; then
  echo "== gtest (label gpu)"
  RERACE_BIN=$bin timeout 300 .devrun/tests/kernels_gpu_test
  RERACE_BIN=$bin timeout 120 .devrun/tests/gpu_record_test
  fi
  if on outcomes; then
  echo "== real outcomes: $runs runs per fix, no recorder ($step)"
  for fix in $fixes; do
    for i in $(seq "$runs"); do
      o=$(timeout 120 $step --fix "$fix" --seed "$i" 2>&1); rc=$?
      n=$(echo "$o" | sed -n 's/^failures: //p')
      ms=$(echo "$o" | sed -n 's/^step 0: \(.*\) ms/\1/p')
      echo "outcome fix=$fix run=$i rc=$rc failures=${n:-?} step0_ms=${ms:-?}"
      [ "$rc" -gt 1 ] && echo "$o"
    done
  done
  fi
  if on recordings; then
  echo "== recordings"
  for v in none:1 none:2 lock-run:1 tls-nargs:1 call-local:1; do
    fix=${v%%:*}; n=${v##*:}
    (cd "$out/traces" && timeout 180 "$bin/rerace" record -o "native-$fix-$n.rrt" -- $step --fix "$fix" --seed "$n")
    echo "recorded fix=$fix n=$n rc=$?"
  done
  ls -la "$out/traces"
  fi
  if on speed; then
  echo "== step time per fix (3 steps: step 0 tunes), 3 runs each"
  for fix in $fixes; do
    for i in 1 2 3; do
      o=$(timeout 120 "$bin/rerace-train-step" --threads 8 --steps 3 --fix "$fix" --seed "$i" 2>&1)
      echo "speed fix=$fix run=$i $(echo "$o" | grep -E '^step|^failures|^throughput' | tr '\n' ' ')"
    done
  done
  fi
  if on overhead; then
    # call-local+prewarm: tuned before the steps and no shared per-call state, so no worker
    # fails and every step does the same work (plain prewarm races on nargs in steady steps).
    for shape in "--tokens 2048 --layers 2" "--tokens 8192 --layers 4"; do
      echo "== recorder overhead on steady steps ($shape, call-local+prewarm, 60 steps), 5 rounds"
      for i in 1 2 3 4 5; do
        o=$(timeout 120 "$bin/rerace-train-step" --threads 8 --steps 60 --fix call-local+prewarm $shape 2>&1)
        echo "plain    $(echo "$o" | grep -E '^step|^failures' | tr '\n' ' ')"
        o=$(cd "$out" && timeout 120 "$bin/rerace" record -o ovh.rrt -- "$bin/rerace-train-step" --threads 8 --steps 60 --fix call-local+prewarm $shape 2>&1)
        echo "recorded $(echo "$o" | grep -E '^step|^failures|rerace:' | tr '\n' ' ')"
        rm -f "$out"/ovh*.rrt
      done
    done
    echo "== launch-heavy: 8 threads x 20000 and 16 threads x 100000 tiny kernels, plain / recorded, 3 rounds"
    for i in 1 2 3; do
      for shape in "--threads 8 --launches 20000" "--threads 16 --launches 100000"; do
        "$bin/gpu_launches" $shape | sed "s/^/plain    $shape: /"
        (cd "$out" && "$bin/rerace" record -o rate.rrt -- "$bin/gpu_launches" $shape 2>&1 | sed "s/^/recorded $shape: /")
        rm -f "$out"/rate*.rrt
      done
    done
  fi
} 2>&1 | tee "$out/h200-native.log"
