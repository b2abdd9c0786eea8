#!/usr/bin/env bash
# Two builds of rerace, one python engine: the same commands must give the same output
# (stdout, stderr, exit code). For a change that must not change any verdict or report
# (issue 26: the engine's protocol and hot paths).
#   tools/scripts/engine-compare.sh BASE_RERACE BASE_ENGINE_DIR NEW_RERACE PYTHON
# BASE_ENGINE_DIR: the folder holding the base's rerace_real (a copy of its replay/engine/python; given
# to it as RERACE_PYTHONPATH). Paths of that folder are spelled as this tree's in the output.
# Race labels are compared as "L": before 2026-12-05 they were freed memory in the engine's
# JSON (PythonWorld's labels outlived by the races). Against such a base, `fuzz --races --json`
# differs (its merge compares labels by pointer, so the base lists a race again for every run
# that has it; a build with interned labels lists it once): the one expected difference.
set -uo pipefail
base=${1:?base rerace}
base_dir=${2:?base engine dir}
new=${3:?new rerace}
py=${4:?python with triton}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
E="--engine python --python-exe $py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
bad=0
run() {
  n=$((n + 1))
  RERACE_PYTHONPATH=$base_dir "$base" "$@" >"$tmp/a.out" 2>"$tmp/a.err"
  local a=$?
  "$new" "$@" >"$tmp/b.out" 2>"$tmp/b.err"
  local b=$?
  for f in "$tmp"/a.out "$tmp"/a.err "$tmp"/b.out "$tmp"/b.err; do
    LC_ALL=C sed -i -E "s#$base_dir#$here/replay/engine/python#g; s/\"label\":\"([^\"\\\\]|\\\\.)*\"/\"label\":L/g" "$f"
  done
  if [ $a != $b ] || ! cmp -s "$tmp/a.out" "$tmp/b.out" || ! cmp -s "$tmp/a.err" "$tmp/b.err"; then
    bad=$((bad + 1))
    echo "DIFF (exit $a / $b): $*"
    diff "$tmp/a.out" "$tmp/b.out" | head -4 | cut -c1-300
    diff "$tmp/a.err" "$tmp/b.err" | head -4 | cut -c1-300
  fi
}
S=traces/samples
for t in triton-none-h200 triton-tls-nargs-h200 triton-keys2-h200 triton-reset-h200 triton-nohooks-h200 triton-both-h200; do
  for s in 1 2 3 4; do run replay $S/$t.rrt $E --seed $s; done
  run replay $S/$t.rrt $E --seed 5 --json --races
  run replay $S/$t.rrt $E --seed 6 --python free-threaded
  run replay $S/$t.rrt $E --seed 7 --strategy pct
done
T=$S/triton-none-h200.rrt
for f in none lock-run tls-nargs tls-state lock-key-event prewarm; do
  run replay $T $E --fix $f --seed 2
  run replay $T $E --fix $f --seed 3 --json
done
run replay $T $E --patch tests/data/patches/reach_bypassed.py --seed 1
run fuzz $T $E --runs 12 --races --json
run fuzz $T $E --runs 12 --fix tls-nargs
run fuzz $T $E --runs 8 --strategy pct --seed 5
run fuzz $S/triton-keys2-h200.rrt $E --runs 8 --python free-threaded
run check $T $E --fix lock-run --bound 1
run check $T $E --fix lock-run --bound 1 --json
run check $T $E --fix none --bound 1
run check $T $E --fix tls-nargs --bound 1 --json
echo "$n cases, $bad differ"
[ $bad = 0 ]
