#!/usr/bin/env bash
# Every hook configuration Triton's Autotuner offers, recorded on a GPU machine (through the
# device tool, from the repository root) and replayed there in the recorded order, in one
# command (issue 15, "every recording followed"):
#   1. TRIALS (1) real trials of each case below, without the recorder (what the GPU does).
#   2. One recording of each case with the Triton probe, as $OUT/triton-CASE-h200.rrt, then
#      `rerace replay --recorded` of it (with the --fix a patched case stands for).
# Cases (tools/experiments/autotune_race.py; 8 threads, a barrier, a cold cache, CONFIGS
# (3) configs so that each recording stays small):
#   reset        reset_to_zero=['y_ptr']
#   both         reset_to_zero=['y_ptr'], restore_value=['x_ptr']
#   user         the user's own pre_hook and post_hook
#   nohooks      no hooks
#   keys2        restore_value=['y_ptr'], the calls on 2 tuning keys
#   prewarm      restore_value=['y_ptr'], 2 keys, each thread's call once serially first
#   lockrun      the lock_run.py patch (a threading.Lock around Autotuner.run), both hooks
# CASES picks some. Writes $OUT/h200-recorded.log. Expects .devrun/.devlibs as
# h200-triton-check.sh.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
exp=$PWD/tools/experiments/autotune_race.py
TRIALS=${TRIALS:-1} CONFIGS=${CONFIGS:-3}
CASES=${CASES:-reset both user nohooks keys2 prewarm lockrun}
args_of() {
  case $1 in
    reset) echo "--hooks reset" ;;
    both) echo "--hooks both" ;;
    user) echo "--hooks user" ;;
    nohooks) echo "--hooks none" ;;
    keys2) echo "--hooks restore --keys 2" ;;
    prewarm) echo "--variant prewarm --hooks restore --keys 2" ;;
    lockrun) echo "--variant lock-run --hooks both" ;;
  esac
}
fix_of() { case $1 in lockrun) echo "--fix lock-run" ;; *) echo "" ;; esac; }
{
  echo "== machine ($(date -u +%FT%TZ))"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version 2>/dev/null | tail -1
  python3 -c 'import sys, platform, torch, triton
gil = getattr(sys, "_is_gil_enabled", lambda: True)()
print("python", platform.python_version(), "gil", gil, "torch", torch.__version__, "triton", triton.__version__)'
  "$bin/rerace" --version 2>/dev/null | head -1
  echo "== compile the configs once (lock-run, 1 trial; not counted)"
  timeout 300 python3 "$exp" --variant lock-run --configs "$CONFIGS" --trials 1 --quiet | tail -1
  for c in $CASES; do
    [ "$TRIALS" -gt 0 ] || break
    echo "== case $c: $TRIALS trial(s), not recorded"
    echo "\$ python3 tools/experiments/autotune_race.py $(args_of "$c") --configs $CONFIGS --trials $TRIALS"
    timeout 120 python3 "$exp" $(args_of "$c") --configs "$CONFIGS" --trials "$TRIALS"
  done
  mkdir -p .devrun/share/rerace/python && rm -rf .devrun/share/rerace/python/rerace_probe
  cp -r recorder/python/rerace_probe .devrun/share/rerace/python/
  for c in $CASES; do
    f=triton-$c-h200.rrt
    echo "== recorded: $c"
    echo "\$ rerace record --probe triton -o $f -- python3 tools/experiments/autotune_race.py $(args_of "$c") --configs $CONFIGS --trials 1"
    rm -f "$out"/triton-"$c"-h200*.rrt
    (cd "$out" && timeout 150 "$bin/rerace" record --probe triton -o "$f" -- \
      python3 "$exp" $(args_of "$c") --configs "$CONFIGS" --trials 1)
    g=$(ls "$out"/triton-"$c"-h200*.rrt 2>/dev/null | head -1)
    [ -n "$g" ] || { echo "no trace written for $c"; continue; }
    [ "$g" = "$out/$f" ] || mv "$g" "$out/$f"
    echo "trace: $f $(stat -c %s "$out/$f") bytes"
    echo "\$ rerace replay --recorded $(fix_of "$c") $f"
    timeout 120 "$bin/rerace" replay --recorded $(fix_of "$c") "$out/$f" | grep -v '^    step' | head -40
    echo "exit ${PIPESTATUS[0]}"
  done
  echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | tee "$out/h200-recorded.log"
