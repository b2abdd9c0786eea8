#!/usr/bin/env bash
# Issue 31, "What only the GPU can settle": every experiment of the issue on a GPU machine, from
# the repository root, in one command. Sections (SECTIONS picks some, in this order):
#   trials    restore_matters.py (an in-place kernel, y += x*w, restore_value=['y_ptr']): each
#             RELEASE (3.6 3.8 3.9; 3.8/3.9 = that release's autotuner.py over the installed
#             compiler) x FIX (none prewarm lock-run tls-nargs tls-state lock-key-event), TRIALS (8)
#             trials of THREADS (8) threads, no recorder; JSON lines to $OUT/settle-trials.jsonl.
#   record    the unpatched step of each release recorded with `rerace record --probe triton`
#             ($OUT/restore-R-none-h200.rrt), then `rerace replay --recorded` and `rerace check
#             --fix F` of it for every fix, with the model (--model triton / triton-3.8 /
#             triton-3.9) and, for 3.6 (the installed Triton), the real-code engine
#             (--engine python, ENGINE_RUNS schedules): $OUT/settle-verdicts.log.
#   fla       the same kernel through FLA's CachedAutotuner (fla-core from .whl/): trials per fix,
#             one recording ($OUT/restore-fla-none-h200.rrt), replayed --recorded, checked per fix
#             (--model fla, and --engine python).
#   overhead  the recorder on launch-heavy steps: gpu_launches (8 x 20000 and 16 x 100000 tiny
#             kernels), rerace-train-step steady steps, plain and recorded, ROUNDS (3) rounds; CUPTI's
#             activity-only minimum from tools/scripts/cupti_activity_overhead.cc (compiled there);
#             the table by tools/scripts/launch-overhead-table.py.
#   multigpu  if nvidia-smi lists 2 or more GPUs: rerace-train-step on all of them, recorded.
# Logs: $OUT/h200-settle.log (everything), $OUT/settle-trials.jsonl, settle-verdicts.log,
# settle-fidelity.md (tools/scripts/restore-matters-table.py), settle-overhead.md; traces $OUT/*.rrt
# (gzipped over 15 MB). The device tool brings back 8 files: keep the default SECTIONS in one
# call only on a machine without its 10-minute limit; there, run it as three calls (below).
#
# Options:
#   --dry-run        print every command instead of running it (works on any CPU machine)
#   --prepare        on the build machine (CPU): put what the GPU machine lacks into ignored
#                    folders to carry: .devrun/{bin,lib} and .devlibs (rerace, librerace_cupti.so,
#                    rerace-train-step and gpu_launches from BUILD=build, a -DRERACE_CUDA=ON
#                    build, and their shared libraries), .devsrc/triton-3.{8,9}.0/triton/runtime/
#                    autotuner.py (from build/py, tools/scripts/python-envs.sh), and the fla-core
#                    wheel in .whl/ (pip download; FLA_VERSION 0.6.0; a few MB, pure Python)
#   --replay-only D  on a CPU after the run: the record section's replays and checks over the
#                    traces in D, with the engine for every release (PYTHONPATH=build/py/triton-X)
#
# The one command (device tool, carry [".devrun", ".devlibs", ".devsrc", ".whl"]):
#   bash tools/scripts/h200-gpu-settle.sh
# split under the 10-minute limit:
#   SECTIONS=trials bash tools/scripts/h200-gpu-settle.sh
#   SECTIONS="record fla" bash tools/scripts/h200-gpu-settle.sh
#   SECTIONS="overhead multigpu" bash tools/scripts/h200-gpu-settle.sh   (kind nvidia-h200-x2 for multigpu)
set -uo pipefail
dry=0 prepare=0 replay_dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1 ;;
    --prepare) prepare=1 ;;
    --replay-only) replay_dir=${2:?--replay-only DIR}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "h200-gpu-settle.sh: unknown argument '$1' (--dry-run, --prepare, --replay-only DIR)" >&2; exit 64 ;;
  esac
  shift
done
cd "$(dirname "$0")/../.." || exit 70
root=$PWD
exp=tools/experiments/restore_matters.py
TRIALS=${TRIALS:-8} THREADS=${THREADS:-8} ROUNDS=${ROUNDS:-3} ENGINE_RUNS=${ENGINE_RUNS:-60}
RELEASES=${RELEASES:-3.6 3.8 3.9}
FIXES=${FIXES:-none prewarm lock-run tls-nargs tls-state lock-key-event}
SECTIONS=${SECTIONS:-trials record fla overhead multigpu}
FLA_VERSION=${FLA_VERSION:-0.6.0}
BUILD=${BUILD:-build}

# run CMD...: prints "$ CMD" and runs it (prints only, with --dry-run). sh_run 'TEXT': the same
# for a line of shell (pipes, cd, redirections).
run() { echo "\$ $*"; [ "$dry" = 1 ] || "$@"; }
sh_run() { echo "\$ $1"; [ "$dry" = 1 ] || bash -c "$1"; }
on() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
model_of() { case $1 in 3.6) echo triton ;; fla) echo fla ;; *) echo "triton-$1" ;; esac; }

if [ "$prepare" = 1 ]; then
  echo "== prepare (build machine): .devrun .devlibs .devsrc .whl"
  run mkdir -p .devrun/bin .devrun/lib .devlibs
  for b in rerace rerace-train-step gpu_launches; do run cp "$BUILD/bin/$b" .devrun/bin/; done
  run cp "$BUILD/lib/librerace_cupti.so" .devrun/lib/
  sh_run "strip .devrun/bin/* .devrun/lib/*.so 2>/dev/null; ldd .devrun/bin/rerace .devrun/lib/librerace_cupti.so | awk '/=> \\//{print \$3}' | grep -E 'capnp|kj|fmt|boost' | sort -u | xargs -r cp -L -t .devlibs/"
  for v in 3.8.0 3.9.0; do
    run mkdir -p ".devsrc/triton-$v/triton/runtime"
    run cp "build/py/triton-$v/triton/runtime/autotuner.py" ".devsrc/triton-$v/triton/runtime/"
  done
  run python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl "fla-core==$FLA_VERSION" einops
  sh_run "du -sh .devrun .devlibs .devsrc .whl"
  echo "carry: [\".devrun\", \".devlibs\", \".devsrc\", \".whl\"] (ignored: add them to .git/info/exclude if git lists them)"
  exit 0
fi

out=${OUT:-/tmp/rerace-settle}
bin=$root/.devrun/bin
if [ -n "$replay_dir" ]; then
  out=$replay_dir
  bin=${RERACE_BIN_DIR:-$root/build/bin}
  SECTIONS="replay"
fi
[ "$dry" = 1 ] || mkdir -p "$out"
json=$out/settle-trials.jsonl
verdicts=$out/settle-verdicts.log

# replay_and_check TRACE RELEASE ENGINE: the recorded order, then every fix, model and (ENGINE=1)
# real-code engine; one "verdict" line each, appended to $verdicts.
replay_and_check() {
  local f=$1 rel=$2 engine=$3 m pp="" modes="model"
  m=$(model_of "$rel")
  [ "$engine" = 1 ] && modes="model python"
  case $rel in
    3.8|3.9) pp="PYTHONPATH=$root/build/py/triton-$rel.0 " ;;
    fla) pp="PYTHONPATH=$root/build/py/fla-core-$FLA_VERSION " ;;
  esac
  [ -z "$replay_dir" ] && pp=""
  # The real code's interpreter: python3 on the GPU machine; on a CPU (--replay-only) build/py's
  # CPython 3.12 for 3.6, and for 3.8/3.9 the CPython 3.11 venv their build/py wheels are for
  # (the tag says which, since the GIL's switch points differ between the two).
  local pyx=python3 pytag=""
  if [ -n "$replay_dir" ]; then
    pyx=$root/build/py/venv312/bin/python pytag=" (CPython 3.12)"
    case $rel in 3.8|3.9|fla) pyx=$root/build/py/venv/bin/python pytag=" (CPython 3.11)" ;; esac
  fi
  for e in $modes; do
    local eng="--model $m --engine model" tag="model $m"
    [ "$e" = python ] && eng="--engine python --python-exe $pyx --runs $ENGINE_RUNS --max-runs $ENGINE_RUNS" tag="engine$pytag"
    # --recorded follows the recorded order with the model alone (the engine refuses it).
    [ "$e" = model ] && sh_run "echo \"== verdict $rel $tag recorded: \$(${pp}timeout 300 '$bin/rerace' replay --recorded $eng '$f' 2>&1 | grep -E '^(summary|FAILED|ok)' | head -3 | tr '\\n' ' ')\" | tee -a '$verdicts'"
    for fix in $FIXES; do
      sh_run "echo \"== verdict $rel $tag fix=$fix: \$(${pp}timeout 300 '$bin/rerace' check '$f' --fix $fix $eng 2>&1 | grep -E '^(verdict|FAILED)' | head -2 | tr '\\n' ' ')\" | tee -a '$verdicts'"
    done
  done
}

# record_one NAME ARGS...: the unpatched step recorded with the probe as $out/NAME.rrt.
record_one() {
  local name=$1; shift
  sh_run "rm -f '$out'/$name*.rrt; (cd '$out' && timeout 300 '$bin/rerace' record --probe triton -o $name.rrt -- python3 '$root/$exp' $* --trials 1)"
  sh_run "g=\$(ls '$out'/$name*.rrt 2>/dev/null | head -1); [ -n \"\$g\" ] && { [ \"\$g\" = '$out/$name.rrt' ] || mv \"\$g\" '$out/$name.rrt'; '$bin/rerace' show '$out/$name.rrt' | grep -vE '^      device' | head -20; } || echo 'no trace written for $name'"
}

{
  echo "== h200-gpu-settle ($(date -u +%FT%TZ)); sections: $SECTIONS; dry run: $dry"
  if [ "$dry" = 0 ] && [ -z "$replay_dir" ]; then
    export LD_LIBRARY_PATH=$root/.devlibs:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
    export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
    mkdir -p .devrun/share/rerace/python && rm -rf .devrun/share/rerace/python/rerace_probe .devrun/share/rerace/python/rerace_real
    cp -r recorder/python/rerace_probe replay/engine/python/rerace_real .devrun/share/rerace/python/
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import sys, platform, torch, triton; print("python", platform.python_version(), "gil", getattr(sys, "_is_gil_enabled", lambda: True)(), "torch", torch.__version__, "triton", triton.__version__)'
    [ -x "$bin/rerace" ] || echo "NB: no $bin/rerace: run --prepare on the build machine and carry .devrun .devlibs (record, fla's recording and overhead need it)"
  fi
  if on fla && [ -z "$replay_dir" ]; then
    sh_run "ls .whl/fla_core-*.whl >/dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; python3 -c 'import einops' || echo 'NB: einops missing: pip download it into .whl too'"
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  if on trials; then
    echo "== trials: releases ($RELEASES) x fixes ($FIXES), $TRIALS trials of $THREADS threads each, no recorder"
    run timeout 300 python3 "$exp" --fix lock-run --trials 1 --threads 2  # compile the configs once; not counted
    for rel in $RELEASES; do
      for fix in $FIXES; do
        run timeout 300 python3 "$exp" --release "$rel" --fix "$fix" --trials "$TRIALS" --threads "$THREADS" --json "$json"
      done
    done
  fi
  if on record; then
    echo "== record: the unpatched step of each release, with the probe; replays and checks"
    for rel in $RELEASES; do
      record_one "restore-$rel-none-h200" --release "$rel" --fix none --threads "$THREADS"
      e=0; [ "$rel" = 3.6 ] && e=1
      replay_and_check "$out/restore-$rel-none-h200.rrt" "$rel" "$e"
    done
  fi
  if on fla; then
    echo "== fla: FLA's CachedAutotuner (fla_cache_autotune), cold cache, $THREADS threads"
    for fix in $FIXES; do
      run timeout 300 python3 "$exp" --fla --fix "$fix" --trials "$TRIALS" --threads "$THREADS" --json "$json"
    done
    record_one restore-fla-none-h200 --fla --fix none --threads "$THREADS"
    replay_and_check "$out/restore-fla-none-h200.rrt" fla 1
  fi
  if on replay; then
    echo "== replay-only over $replay_dir (engine for every release; build/py's Tritons)"
    for rel in $RELEASES fla; do
      f=$out/restore-$rel-none-h200.rrt
      [ -e "$f" ] || [ "$dry" = 1 ] || { echo "no $f"; continue; }
      replay_and_check "$f" "$rel" 1
    done
  fi
  if on trials || on record || on fla || on replay; then
    sh_run "[ -s '$json' ] && python3 tools/scripts/restore-matters-table.py '$json' '$verdicts' | tee '$out/settle-fidelity.md' || echo 'no trials in $json: no table'"
  fi
  if on overhead; then
    echo "== overhead: launch-heavy steps, plain / recorded, $ROUNDS rounds; CUPTI activity-only minimum"
    sh_run "g++ -O2 -std=c++20 tools/scripts/cupti_activity_overhead.cc -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -L/usr/local/cuda/extras/CUPTI/lib64 -L/usr/local/cuda/lib64 -lcuda -lcupti -lpthread -o /tmp/cupti_activity_overhead"
    for mode in off act-shared; do
      for th in 8 16; do
        sh_run "/tmp/cupti_activity_overhead $mode $th 0 $ROUNDS | grep '^mode=' | sed 's/^/ovh cupti /'"
      done
    done
    for i in $(seq "$ROUNDS"); do
      for shape in "--threads 8 --launches 20000" "--threads 16 --launches 100000"; do
        tag="threads=$(echo $shape | cut -d' ' -f2) launches=$(echo $shape | cut -d' ' -f4)"
        sh_run "'$bin/gpu_launches' $shape | sed 's/^/ovh launches plain $tag: /'"
        sh_run "(cd '$out' && '$bin/rerace' record -o rate.rrt -- '$bin/gpu_launches' $shape 2>&1 | grep done | sed 's/^/ovh launches recorded $tag: /'; rm -f '$out'/rate*.rrt)"
      done
      for shape in "--tokens 512 --layers 8" "--tokens 2048 --layers 2"; do
        st="--threads 8 --steps 40 --fix call-local+prewarm $shape"
        sh_run "timeout 120 '$bin/rerace-train-step' $st | grep '^step' | sed 's/^/ovh step plain $shape: /'"
        sh_run "(cd '$out' && timeout 120 '$bin/rerace' record -o ovh.rrt -- '$bin/rerace-train-step' $st 2>&1 | grep '^step' | sed 's/^/ovh step recorded $shape: /'; rm -f '$out'/ovh*.rrt)"
      done
    done
    sh_run "python3 tools/scripts/launch-overhead-table.py '$out/h200-settle.log' | tee '$out/settle-overhead.md'"
  fi
  if on multigpu; then
    n=$([ "$dry" = 1 ] && echo 2 || nvidia-smi -L 2>/dev/null | wc -l)
    if [ "$n" -ge 2 ]; then
      echo "== multigpu: $n GPUs"
      sh_run "(cd '$out' && timeout 180 '$bin/rerace' record -o native-multigpu-h200.rrt -- '$bin/rerace-train-step' --threads 8 --steps 1 --fix none --seed 1)"
      sh_run "'$bin/rerace' replay --recorded '$out'/native-multigpu-h200*.rrt | grep -E '^(summary|FAILED|ok)'"
    else
      echo "== multigpu: skipped, $n GPU(s) (ask the device tool for kind nvidia-h200-x2)"
    fi
  fi
  [ "$dry" = 1 ] || [ -z "$(ls "$out"/*.rrt 2>/dev/null)" ] || for f in "$out"/*.rrt; do
    [ "$(stat -c %s "$f")" -gt 15000000 ] && gzip -9 "$f"
  done
  echo "== done ($(date -u +%FT%TZ))"
} 2>&1 | { if [ "$dry" = 1 ]; then cat; else tee -a "$out/h200-settle.log"; fi; }
