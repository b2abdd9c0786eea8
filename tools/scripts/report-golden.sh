#!/usr/bin/env bash
# Golden output of replay / fuzz / check / merge / show: runs a representative set of commands
# with one rerace binary and writes, per command, its standard output, standard error, exit
# code and the files it wrote into OUT. Two binaries that must report alike (before and after a
# refactor, two build types) are compared with `diff -r OUT_A OUT_B`:
#
#   tools/scripts/report-golden.sh /work/main/build/bin/rerace /tmp/golden-before
#   tools/scripts/report-golden.sh build-dev/bin/rerace /tmp/golden-after
#   diff -r /tmp/golden-before /tmp/golden-after
#
# Paths in the output are the same for any binary and any OUT: the commands run inside
# OUT/work, the traces through the link t -> traces/samples, the written files under it.
# PYTHON_EXE (default build/py/venv312/bin/python of the source tree's main build, else the
# first python3) runs the few --engine python cases; NO_PYTHON=1 leaves them out.
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 RERACE_BINARY OUT_FOLDER" >&2
  exit 64
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON_EXE:-/work/main/build/py/venv312/bin/python}
rm -rf "$out"
mkdir -p "$out/work"
out=$(cd "$out" && pwd)
cd "$out/work" || exit 70
ln -s "$src/traces/samples" t
export NO_PROGRESS=1 NO_COLOR=1
unset PYTHONPATH JOB_COMPLETION_INDEX SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT RERACE_SHARDS

n=0
# junit FILE NAME: keeps FILE as NAME without its times (the seconds each JUnit case took, the
# one part of a report that differs between two runs of the same seeds).
junit() { [ -e "$1" ] && sed -E 's/ time="[0-9.]+"//g' "$1" >"$out/$2"; }
# case NAME ARGS...: runs `rerace ARGS...` and keeps NAME.out, NAME.err and NAME.rc.
case_() {
  local name=$1
  shift
  n=$((n + 1))
  (exec -a rerace "$bin" "$@") >"$out/$name.out" 2>"$out/$name.err"  # named as from PATH
  echo $? >"$out/$name.rc"
}

none=t/triton-none-h200.rrt
# replay: seeds, strategies, fixes, JSON, races, a saved schedule and its replay, the recorded order.
for seed in 1 2 7 42; do
  case_ "replay-none-s$seed" replay $none --seed $seed
done
case_ replay-none-pct-json replay $none --seed 3 --strategy pct --json
case_ replay-none-races replay $none --seed 5 --races
case_ replay-none-races-json replay $none --seed 5 --races --json
case_ replay-none-failure replay $none --seed 2 --failure KeyError
case_ replay-lockrun replay $none --seed 1 --fix lock-run
case_ replay-prewarm replay $none --seed 1 --fix prewarm
case_ replay-save replay $none --seed 4 --save-schedule replay-4.sched
cp replay-4.sched "$out/replay-4.sched" 2>/dev/null
case_ replay-schedule-file replay $none --schedule replay-4.sched
case_ replay-schedule-file-json replay $none --schedule replay-4.sched --json
case_ replay-perfetto replay $none --seed 1 --perfetto replay-1.json
cp replay-1.json "$out/replay-1.perfetto.json" 2>/dev/null
case_ replay-recorded replay $none --recorded
case_ replay-recorded-json replay $none --recorded --json
case_ replay-native replay t/native-none-h200.rrt --seed 3
case_ replay-native-lockrun replay t/native-lock-run-h200.rrt --seed 3 --model native
case_ replay-torch replay t/torch-two-threads-h200.rrt --seed 1 --model triton
case_ replay-keys2 replay t/triton-keys2-h200.rrt --seed 9 --strategy surw
case_ replay-portfolio replay t/triton-both-h200.rrt --seed 6 --strategy portfolio
case_ replay-tls-patched replay t/triton-tls-nargs-patched-h200.rrt --seed 1
case_ replay-tls-patched-fix replay t/triton-tls-nargs-patched-h200.rrt --seed 1 --fix tls-nargs

# fuzz: seeds, fixes, several traces, JSON, JUnit, saved failures, shards and their merge.
for seed in 1 100; do
  case_ "fuzz-none-s$seed" fuzz $none --runs 150 --seed $seed --jobs 1
done
case_ fuzz-none-jobs2 fuzz $none --runs 150 --seed 1 --jobs 2
case_ fuzz-none-pct fuzz $none --runs 100 --strategy pct --pct-depth 3 --jobs 1
case_ fuzz-lockrun fuzz $none --runs 100 --fix lock-run --jobs 1
case_ fuzz-prewarm fuzz $none --runs 100 --fix prewarm --jobs 1
case_ fuzz-many fuzz $none t/native-none-h200.rrt t/triton-keys2-h200.rrt --runs 60 --jobs 1
case_ fuzz-json fuzz $none t/native-none-h200.rrt --runs 60 --json --jobs 1
case_ fuzz-races fuzz $none --runs 40 --races --jobs 1
case_ fuzz-races-json fuzz $none --runs 40 --races --json --jobs 1
case_ fuzz-failure fuzz $none --runs 100 --failure in-param-not-in-cache --jobs 1
mkdir -p saved
case_ fuzz-save fuzz $none t/native-none-h200.rrt --runs 80 --save-failures saved --junit fuzz.xml --jobs 1
junit fuzz.xml fuzz-save.junit.xml
for f in saved/*; do [ -e "$f" ] && cp "$f" "$out/fuzz-save.$(basename "$f")"; done
case_ fuzz-save-replay replay $none --schedule "$(ls saved/triton-none-h200-none-1.sched 2>/dev/null || echo missing)"
case_ fuzz-junit-lockrun fuzz $none --runs 50 --fix lock-run --junit fuzz-lockrun.xml --jobs 1
junit fuzz-lockrun.xml fuzz-lockrun.junit.xml
for k in 0 1 2; do
  case_ "fuzz-shard-$k" fuzz $none t/native-none-h200.rrt --runs 40 --shard $k/3 --json --jobs 1
  cp "$out/fuzz-shard-$k.out" "shard-$k.json"
done
case_ fuzz-shard-text fuzz $none --runs 40 --shard 1/3 --jobs 1
JOB_COMPLETION_INDEX=2 RERACE_SHARDS=3 case_ fuzz-shard-auto fuzz $none --runs 40 --shard auto --jobs 1
case_ merge merge shard-0.json shard-1.json shard-2.json --junit merge.xml
junit merge.xml merge.junit.xml
case_ merge-missing merge shard-0.json shard-2.json
case_ merge-twice merge shard-0.json shard-0.json shard-1.json shard-2.json

# check: the automatic plan, bounds, fixes, JSON, a saved counterexample, races.
case_ check-none check $none
case_ check-none-json check $none --json
case_ check-none-save check $none --save-schedule check-none.sched
cp check-none.sched "$out/check-none.sched" 2>/dev/null
case_ check-none-save-replay replay $none --schedule check-none.sched
case_ check-lockrun check $none --fix lock-run
case_ check-lockrun-json check $none --fix lock-run --json
case_ check-lockrun-save check $none --fix lock-run --save-schedule check-lockrun.sched
case_ check-prewarm check $none --fix prewarm
case_ check-tls-nargs check $none --fix tls-nargs
case_ check-bound1 check $none --fix lock-run --bound 1
case_ check-bound0 check $none --fix lock-run --bound 0
case_ check-bound2-budget check $none --fix lock-run --bound 2 --max-runs 50
case_ check-naive check $none --fix lock-run --bound 1 --naive --max-runs 500
case_ check-races check $none --fix lock-run --races --runs 200
case_ check-failure check $none --failure in-param-not-in-cache
case_ check-native check t/native-none-h200.rrt --fix lock-run --runs 300
case_ check-native-fails check t/native-none-h200.rrt --runs 300
case_ check-keys2 check t/triton-keys2-h200.rrt --fix call-local --runs 300

# show and export.
case_ show show $none
case_ show-native show t/native-none-h200.rrt

# Error cases: usage (64), bad data (65), missing input (66), refused outputs.
case_ err-no-trace replay missing.rrt
case_ err-bad-fix replay $none --fix no-such-fix
case_ err-bad-model replay $none --model nope
case_ err-bad-runs fuzz $none --runs -1
case_ err-bad-shard fuzz $none --runs 5 --shard 3/3
case_ err-shard-auto fuzz $none --runs 5 --shard auto
case_ err-empty-schedule replay $none --schedule ''
case_ err-schedule-mismatch replay $none --schedule replay-4.sched --fix lock-run
case_ err-output-is-input replay $none --seed 1 --save-schedule $none
case_ err-junit-is-input fuzz $none --runs 5 --junit $none
case_ err-patch-model replay $none --patch "$src/README.md"
case_ err-python-version replay $none --engine python --python-version 3.12
case_ err-check-zero check $none --runs 0 --bound 1 --max-runs 1 --fix lock-run
case_ err-bad-failure fuzz $none --runs 5 --failure nonsense
case_ err-not-a-trace replay "$src/README.md"
printf 'not json' >bad.json
case_ err-merge-bad merge bad.json
case_ err-inline-schedule replay $none --schedule rs1:garbage
case_ err-save-dir fuzz $none --runs 5 --save-failures /dev/null/x

# The real-code engine (slow: one interpreter each), when its Python is there.
if [ "${NO_PYTHON:-0}" != 1 ] && [ -x "$py" ]; then
  case_ py-fuzz fuzz $none --engine python --python-exe "$py" --runs 3 --jobs 1
  case_ py-replay-json replay $none --engine python --python-exe "$py" --seed 2 --json
  case_ py-check-lockrun check $none --engine python --python-exe "$py" --fix lock-run --runs 5 --max-runs 20
fi

rm -f "$out/work/t"
echo "report-golden: $n commands with $bin into $out"
