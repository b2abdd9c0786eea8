#!/usr/bin/env bash
# Issue 18 on a GPU machine (through the device tool, from the repository root): real step
# times per named fix against which rerace's cost estimate is compared, and the recordings
# the estimate is made from.
#   1. native training step: RUNS (8) runs of `rerace-train-step --threads 8 --steps 1 --fix F`
#      per fix (step 0's wall time), and one recording of each fix (native-F-cost-h200.rrt).
#   2. the brief's Triton experiment: `autotune_race.py --variant V --trials TRIALS` per variant
#      (trial 0 cold, later trials warm), and one recording of each (triton-V-cost-h200.rrt).
#   3. two threads with two streams each (two_streams.py): TRIALS trials, one recording.
#   4. two ranks (processes) of the native step with lock-run sharing the GPU: RUNS runs, one
#      recording of each rank.
# Traces are packed into $OUT/*.tgz (the device tool returns at most 8 files). Expects
# .devrun/.devlibs as h200-recorder-check.sh; logs to $OUT/h200-cost.log.
set -uo pipefail
. "$(dirname "$0")/h200-env.sh"
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
