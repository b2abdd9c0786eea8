#!/usr/bin/env bash
# Issue 18's GPU measurements of the real step times per fix, against which rerace's cost
# estimate is compared, and the recordings the estimate is made from: one script, four
# variants (formerly h200-cost-check.sh, h200-cost2-check.sh, h200-cost3-check.sh and
# h200-cost4-check.sh; the logs under docs/gpu-logs/ name them so). Run through the device tool
# from the repository root, with .devrun/.devlibs as h200-recorder-check.sh:
#
#   tools/scripts/h200-cost-check.sh [--variant 1|2|3|4]      (default 1; or VARIANT=N)
#
# Each variant keeps its own environment knobs (RUNS, TRIALS, TAG, SPECS, ...), as below.
#
# --variant 1 (was h200-cost-check.sh):
#   Issue 18 on a GPU machine (through the device tool, from the repository root): real step
#   times per named fix against which rerace's cost estimate is compared, and the recordings
#   the estimate is made from.
#     1. native training step: RUNS (8) runs of `rerace-train-step --threads 8 --steps 1 --fix F`
#        per fix (step 0's wall time), and one recording of each fix (native-F-cost-h200.rrt).
#     2. the brief's Triton experiment: `autotune_race.py --variant V --trials TRIALS` per variant
#        (trial 0 cold, later trials warm), and one recording of each (triton-V-cost-h200.rrt).
#     3. two threads with two streams each (two_streams.py): TRIALS trials, one recording.
#     4. two ranks (processes) of the native step with lock-run sharing the GPU: RUNS runs, one
#        recording of each rank.
#   Traces are packed into $OUT/*.tgz (the device tool returns at most 8 files). Expects
#   .devrun/.devlibs as h200-recorder-check.sh; logs to $OUT/h200-cost.log.
#
# --variant 2 (was h200-cost2-check.sh):
#   Issue 18, second measurement (through the device tool, from the repository root, with
#   .devrun/.devlibs as h200-recorder-check.sh; log to $OUT/h200-cost2.log): (1) the native step's call-local at 1/2/4/8 threads and lock-run
#   at 1/8 threads (8 runs each, step 0): do eight concurrent tunings serialize? (2) the Triton
#   experiment's cold trial (a fresh process each, --trials 1) 8 times per variant, the
#   counterpart of a recording (which is a process's first trial).
#
# --variant 3 (was h200-cost3-check.sh):
#   Issue 18, third measurement: do concurrent Python trials slow each other (the host under the
#   GIL)? Through the device tool, from the repository root, with .devrun/.devlibs as
#   h200-recorder-check.sh; log to $OUT/h200-cost3.log, recordings to $OUT/t.
#     1. The Triton experiment's cold trial (a fresh process each, --trials 1, after one compiling
#        run), RUNS times per (variant, threads): lock-run at 8 threads (tuning serialized), tls-state
#        (every thread tunes, each its own state) at 1, 2, 4 and 8 threads (SPECS: which).
#     2. One recording of each (cold), and of the unpatched run at 8 threads:
#        triton-V-tN-cost3-h200.rrt (RECS: which).
#
# --variant 4 (was h200-cost4-check.sh):
#   Issue 18, fourth measurement: the native step's fixes whose own recording was off (per-thread-
#   tuner, +15.9 % from one recording that ran slow) or not kept (owner-thread). Through the device
#   tool, from the repository root, with .devrun/.devlibs as h200-recorder-check.sh; log to
#   $OUT/h200-$TAG.log, recordings to $OUT/native-$TAG.tgz.
#     For each fix in FIXES, ROUNDS (3) rounds of: RUNS (4) runs of
#     `rerace-train-step --threads 8 --steps 1 --fix F` (step 0's wall time), then one recording
#     (native-F-r<round>-cost4-h200.rrt), so that the recordings and the real runs interleave and
#     the estimate can be compared with the real median per recording, not with one lucky run.
#     Before that, the GPU tests (gpu_record_test, kernels_gpu_test) unless TESTS=0. TAG (cost4)
#     names the log, the recordings and the archive (cost5: the recorder with one activity buffer
#     for the process, docs/RECORDER.md).
set -uo pipefail
variant=${VARIANT:-1}
while [ $# -gt 0 ]; do
  case $1 in
    --variant) variant=${2:-}; shift 2 ;;
    --variant=*) variant=${1#--variant=}; shift ;;
    *) echo "usage: $0 [--variant 1|2|3|4]" >&2; exit 64 ;;
  esac
done
case $variant in
  1|2|3|4) ;;
  *) echo "$0: --variant '$variant': expected 1, 2, 3 or 4" >&2; exit 64 ;;
esac
. "$(dirname "$0")/h200-env.sh"

variant1() {
  runs=${RUNS:-8} trials=${TRIALS:-8}
  nfixes=${NFIXES:-none lock-run tls-nargs call-local lock-key-future per-thread-tuner prewarm owner-thread}
  tvariants=${TVARIANTS:-none lock-run tls-nargs tls-state lock-key-event prewarm}
  sections=${SECTIONS:-native triton streams ranks}
  on() { case " $sections " in *" $1 "*) return 0;; esac; return 1; }
  exp=$PWD/tools/experiments
  mkdir -p "$out/n" "$out/t" "$out/o" .devrun/share/rerace/python
  rm -rf .devrun/share/rerace/python/rerace_probe && cp -r recorder/python/rerace_probe .devrun/share/rerace/python/
  {
    echo "== machine ($(date -u +%FT%TZ))"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c 'import platform, torch, triton; print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__)'
    if on native; then
      for fix in $nfixes; do
        for i in $(seq "$runs"); do
          o=$(timeout 60 "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed "$i" 2>&1)
          echo "native fix=$fix run=$i rc=$? failures=$(echo "$o" | sed -n 's/^failures: //p') $(echo "$o" | grep -E '^step 0' | tr '\n' ' ')"
        done
        (cd "$out/n" && timeout 60 "$bin/rerace" record -o "native-$fix-cost-h200.rrt" -- "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed 1 2>&1 | grep -E '^step 0|^failures|rerace:' | sed "s/^/recorded native $fix: /")
      done
      (cd "$out/n" && tar czf "$out/native.tgz" . && rm -f ./*.rrt)
    fi
    if on triton; then
      echo "== compile once"; timeout 300 python3 "$exp/autotune_race.py" --variant lock-run --trials 1 --quiet | tail -1
      for v in $tvariants; do
        echo "\$ python3 tools/experiments/autotune_race.py --variant $v --trials $trials --quiet"
        timeout 200 python3 "$exp/autotune_race.py" --variant "$v" --trials "$trials" --quiet 2>&1 | grep -E '^trial|^variant' | sed "s/^/triton $v: /"
        (cd "$out/t" && timeout 200 "$bin/rerace" record --probe triton -o "triton-$v-cost-h200.rrt" -- python3 "$exp/autotune_race.py" --variant "$v" --trials 1 --quiet 2>&1 | grep -E '^trial|rerace:' | sed "s/^/recorded triton $v: /")
        k=$((${k:-0} + 1))
        [ $((k % 3)) = 0 ] && (cd "$out/t" && tar czf "$out/triton-$k.tgz" ./*.rrt && rm -f ./*.rrt)
      done
      ls "$out"/t/*.rrt >/dev/null 2>&1 && (cd "$out/t" && tar czf "$out/triton-rest.tgz" ./*.rrt && rm -f ./*.rrt)
    fi
    if on streams; then
      echo "\$ python3 tools/experiments/two_streams.py --trials $trials"
      timeout 120 python3 "$exp/two_streams.py" --trials "$trials" | sed 's/^/streams: /'
      (cd "$out/o" && timeout 120 "$bin/rerace" record -o torch-two-streams-h200.rrt -- python3 "$exp/two_streams.py" --trials 1 2>&1 | sed 's/^/recorded streams: /')
    fi
    if on ranks; then
      for i in $(seq "$runs") rec; do
        for r in 0 1; do
          if [ "$i" = rec ]; then
            (cd "$out/o" && RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 timeout 60 "$bin/rerace" record -o native-lock-run-ranks-h200.rrt -- \
              "$bin/rerace-train-step" --threads 4 --steps 1 --fix lock-run --seed $((r + 1)) > "$out/rank$r.txt" 2>&1) &
          else
            RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 timeout 60 "$bin/rerace-train-step" --threads 4 --steps 1 --fix lock-run --seed $((r + 1)) > "$out/rank$r.txt" 2>&1 &
          fi
        done
        wait
        for r in 0 1; do echo "ranks run=$i rank=$r $(grep -E '^step 0|^failures' "$out/rank$r.txt" | tr '\n' ' ')"; done
      done
      rm -f "$out"/rank*.txt
    fi
    ls -la "$out/n" "$out/t" "$out/o"
    echo "== done ($(date -u +%FT%TZ))"
  } 2>&1 | tee "$out/h200-cost.log"
  (cd "$out/o" && tar czf "$out/other.tgz" .)
  rm -rf "$out/n" "$out/t" "$out/o"; ls -la "$out"
}

variant2() {
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
}

variant3() {
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
}

variant4() {
  fixes=${FIXES:-per-thread-tuner owner-thread} rounds=${ROUNDS:-3} runs=${RUNS:-4} tag=${TAG:-cost4}
  mkdir -p "$out/n"
  {
  echo "== machine ($(date -u +%FT%TZ))"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  if [ "${TESTS:-1}" = 1 ]; then
    echo "== GPU tests"
    RERACE_BIN=$bin timeout 120 .devrun/tests/gpu_record_test 2>&1 | tail -3
    RERACE_BIN=$bin timeout 300 .devrun/tests/kernels_gpu_test 2>&1 | tail -3
  fi
  for fix in $fixes; do
    for r in $(seq "$rounds"); do
      for i in $(seq "$runs"); do
        o=$(timeout 60 "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed "$i" 2>&1)
        echo "native fix=$fix round=$r run=$i rc=$? failures=$(echo "$o" | sed -n 's/^failures: //p') $(echo "$o" | grep -E '^step 0' | tr '\n' ' ')"
      done
      (cd "$out/n" && timeout 60 "$bin/rerace" record -o "native-$fix-r$r-$tag-h200.rrt" -- "$bin/rerace-train-step" --threads 8 --steps 1 --fix "$fix" --seed 1 2>&1 | grep -E '^step 0|^failures|rerace:' | sed "s/^/recorded native $fix round=$r: /")
    done
  done
  ls -la "$out/n"
  echo "== done ($(date -u +%FT%TZ))"
  } 2>&1 | tee "$out/h200-$tag.log"
  (cd "$out/n" && tar czf "$out/native-$tag.tgz" ./*.rrt) && rm -rf "$out/n"
}

"variant$variant"
