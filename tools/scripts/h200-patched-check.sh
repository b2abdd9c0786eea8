#!/usr/bin/env bash
# The brief's experiment with each named fix applied as a patch file, on a GPU machine (through
# the device tool, from the repository root), in one command:
#   1. TRIALS (8) real trials of each variant: none, lock-run, tls-nargs, tls-state,
#      lock-key-event (replay/engine/python/rerace_real/fixes/*.py through --variant) and prewarm;
#      8 threads, a cold cache, the l2norm kernel; per-worker exceptions and y checks.
#   2. The cached-call storm of each of STORM_VARIANTS (none): a serial prewarm, then 8 threads
#      x STORM (3000) calls, at sys.setswitchinterval(1e-6) and at the default interval
#      (STORM_TRIALS each).
#   3. If .devrun/bin/rerace is there (RECORD=0 skips): one recording of each patched variant
#      with the Triton probe, as $OUT/triton-VARIANT-patched-h200.rrt (gzipped when over 15 MB,
#      the device tool's limit per file), and `rerace show` of each.
# TRIALS=0 or STORM=0 skips step 1 or 2; RECORD_ONLY=1 runs step 3 alone.
# Writes $OUT/h200-patched.log (everything) and $OUT/h200-patched-trials.jsonl (one JSON object
# per trial, every worker's outcome). Expects .devrun/.devlibs as h200-triton-check.sh.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
exp=$PWD/tools/experiments/autotune_race.py
json=$out/h200-patched-trials.jsonl
: >"$json"
TRIALS=${TRIALS:-8} STORM=${STORM:-3000} STORM_TRIALS=${STORM_TRIALS:-2}
VARIANTS=${VARIANTS:-none lock-run tls-nargs tls-state lock-key-event prewarm}
STORM_VARIANTS=${STORM_VARIANTS:-none}
[ "$TRIALS" = 0 ] && VARIANTS=""
RECORD_VARIANTS=${RECORD_VARIANTS:-lock-run tls-nargs tls-state lock-key-event prewarm}
RECORD=${RECORD:-1}
[ -x "$bin/rerace" ] || RECORD=0
{
  echo "== machine ($(date -u +%FT%TZ))"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version 2>/dev/null | tail -1
  python3 -c 'import sys, platform, torch, triton
gil = getattr(sys, "_is_gil_enabled", lambda: True)()
try:
    import fla; f = fla.__version__
except Exception:
    f = "not installed"
print("python", platform.python_version(), "gil", gil, "torch", torch.__version__, "triton", triton.__version__, "fla", f)'
  echo "== compile the 12 configs once (lock-run, 1 trial; not counted)"
  timeout 300 python3 "$exp" --variant lock-run --trials 1 --quiet | tail -1
  [ "${RECORD_ONLY:-0}" = 1 ] && VARIANTS="" STORM=0
  for v in $VARIANTS; do
    echo "== variant $v: $TRIALS trials, 8 threads, cold cache"
    echo "\$ python3 tools/experiments/autotune_race.py --variant $v --trials $TRIALS"
    timeout 300 python3 "$exp" --variant "$v" --trials "$TRIALS" --json "$json"
  done
  for v in $([ "$STORM" -gt 0 ] && echo $STORM_VARIANTS); do
    for si in 1e-6 default; do
      echo "== storm ($v): serial prewarm, then 8 threads x $STORM cached calls, switch interval $si"
      arg=(); [ "$si" = default ] || arg=(--switch-interval "$si")
      [ "$v" = none ] || arg+=(--variant "$v")
      echo "\$ python3 tools/experiments/autotune_race.py --storm $STORM ${arg[*]} --trials $STORM_TRIALS"
      timeout 300 python3 "$exp" --storm "$STORM" "${arg[@]}" --trials "$STORM_TRIALS" --json "$json"
    done
  done
  if [ "$RECORD" = 1 ]; then
    # The probe that rerace record loads: this checkout's (an installed layout next to the binary).
    mkdir -p .devrun/share/rerace/python && rm -rf .devrun/share/rerace/python/rerace_probe
    cp -r recorder/python/rerace_probe .devrun/share/rerace/python/
    for v in $RECORD_VARIANTS; do
      echo "== recorded: $v"
      echo "\$ rerace record --probe triton -o triton-$v-patched-h200.rrt -- python3 tools/experiments/autotune_race.py --variant $v --trials 1"
      rm -f "$out"/triton-"$v"-patched-h200*.rrt
      (cd "$out" && timeout 300 "$bin/rerace" record --probe triton -o "triton-$v-patched-h200.rrt" -- \
        python3 "$exp" --variant "$v" --trials 1)
      f=$(ls "$out"/triton-"$v"-patched-h200*.rrt 2>/dev/null | head -1)
      [ -n "$f" ] || { echo "no trace written for $v"; continue; }
      [ "$f" = "$out/triton-$v-patched-h200.rrt" ] || mv "$f" "$out/triton-$v-patched-h200.rrt"
      f=$out/triton-$v-patched-h200.rrt
      "$bin/rerace" show "$f" | grep -vE '^      device' | head -40
      size=$(stat -c %s "$f")
      echo "trace: $(basename "$f") $size bytes"
      if [ "$size" -gt 15000000 ]; then gzip -9 "$f" && echo "gzipped: $(stat -c %s "$f.gz") bytes"; fi
    done
  fi
  echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | tee "$out/h200-patched.log"
