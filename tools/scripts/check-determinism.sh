#!/usr/bin/env bash
# Determinism across optimization levels: two builds of rerace (e.g. -O2 and -O0) must print
# byte-identical reports for the same inputs and seeds.
# The C++ model (--engine model), then the real-code engine (--engine python) when build/py has a
# Python with Triton (tools/scripts/python-envs.sh): the C++ side of the engine (its scheduler,
# strategies, DPOR, shrinking and reports) is in both builds; its Python is the same for both.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each build invoked as "rerace" (argv[0]): the hints name the command as invoked, which must not
# be where the build lies.
as_rerace() {  # as_rerace BINARY NAME: NAME, a script that runs BINARY with argv[0] "rerace"
  printf '#!/usr/bin/env bash\nexec -a rerace %q "$@"\n' "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" >"$2"
  chmod +x "$2"
}
as_rerace "$1" "$tmp/rerace-a"
as_rerace "$2" "$tmp/rerace-b"
a=$tmp/rerace-a b=$tmp/rerace-b
run() {
  local bin=$1 out=$2
  : >"$out"
  for bug in $("$bin" classic --list | awk '{print $1}'); do
    for strategy in random pct timed round-robin; do
      "$bin" classic "$bug" --strategy "$strategy" --seed 11 --runs 200 >>"$out" 2>&1 || true
    done
  done
}
run "$a" "$tmp/a"
run "$b" "$tmp/b"
# Synthetic traces: the same scenario must give the same bytes from both builds.
"$a" synth -o "$tmp/a.rrt" --seed 5 >/dev/null
"$b" synth -o "$tmp/b.rrt" --seed 5 >/dev/null
if ! cmp -s "$tmp/a.rrt" "$tmp/b.rrt"; then
  echo "check-determinism: $a and $b wrote different synthetic traces"
  exit 1
fi
if ! cmp -s "$tmp/a" "$tmp/b"; then
  echo "check-determinism: $a and $b disagree:"
  diff "$tmp/a" "$tmp/b" | head -20
  exit 1
fi
# Replay, fuzz and check reports on the bundled trace.
replay_all() {
  local bin=$1 out=$2
  : >"$out"
  for seed in 1 2 3 17 99; do
    "$bin" replay --engine model "$trace" --seed "$seed" >>"$out" 2>&1 || true
    "$bin" replay --engine model "$trace" --seed "$seed" --strategy pct --json >>"$out" 2>&1 || true
  done
  "$bin" replay --engine model "$trace" --recorded >>"$out" 2>&1 || true
  "$bin" replay --engine model "$real" --recorded --json >>"$out" 2>&1 || true
  "$bin" check --engine model "$real" --fix tls-nargs --runs 100 >>"$out" 2>&1 || true
  "$bin" replay --engine model "$native" --recorded --json >>"$out" 2>&1 || true
  for seed in 1 5; do "$bin" replay --engine model "$native" --seed "$seed" >>"$out" 2>&1 || true; done
  "$bin" check --engine model "$native" --fix lock-key-future --runs 200 >>"$out" 2>&1 || true
  "$bin" check --engine model "$real" --fix lock-run --bound 2 >>"$out" 2>&1 || true
  "$bin" check --engine model "$real" --fix tls-nargs --bound 1 >>"$out" 2>&1 || true
  "$bin" fuzz --engine model "$trace" --runs 200 --strategy timed >>"$out" 2>&1 || true
  # Targeted checks, race lists, saved failures and what show prints (demangled kernels).
  "$bin" check --engine model "$real" --failure in-param-not-in-cache >>"$out" 2>&1 || true
  "$bin" fuzz --engine model "$trace" --runs 100 --races --json >>"$out" 2>&1 || true
  rm -rf "$tmp/saved" && "$bin" fuzz --engine model "$real" --runs 100 --save-failures "$tmp/saved" >>"$out" 2>&1 || true
  cat "$tmp"/saved/*.sched >>"$out"
  "$bin" show "$native" >>"$out" 2>&1 || true
  for fix in none tls-nargs lock-run owner-thread; do
    "$bin" check --engine model "$trace" --fix "$fix" --runs 300 >>"$out" 2>&1 || true
  done
}
trace=$(dirname "$0")/../../traces/samples/synth-h200-shape.rrt
real=$(dirname "$0")/../../traces/samples/triton-none-h200.rrt
native=$(dirname "$0")/../../traces/samples/native-none-h200.rrt
replay_all "$a" "$tmp/ra"
replay_all "$b" "$tmp/rb"
if ! cmp -s "$tmp/ra" "$tmp/rb"; then
  echo "check-determinism: $a and $b disagree on replay reports:"
  diff "$tmp/ra" "$tmp/rb" | head -20
  exit 1
fi
echo "check-determinism: replay, fuzz and check reports agree ($(wc -l <"$tmp/ra") lines)"
# The real-code engine: replay, fuzz (with races and saved, shrunk failures) and check (DPOR under
# the GIL, on two engines with --jobs 2, a patch file), each from both builds.
py=""
for v in build/py/venv312/bin/python build/py/venv/bin/python; do
  if [ -x "$v" ] && "$v" -c 'import triton' 2>/dev/null; then py=$v; break; fi
done
if [ -z "$py" ]; then
  echo "check-determinism: the real-code engine not compared: no build/py Python imports triton (tools/scripts/python-envs.sh)"
else
  engine_all() {
    local bin=$1 out=$2 e="--engine python --python-exe $py"
    : >"$out"
    for seed in 1 3; do "$bin" replay "$real" $e --seed "$seed" --json --races >>"$out" 2>&1 || true; done
    "$bin" replay "$real" $e --seed 2 --python free-threaded >>"$out" 2>&1 || true
    rm -rf "$tmp/esaved" && "$bin" fuzz "$real" $e --runs 8 --races --save-failures "$tmp/esaved" >>"$out" 2>&1 || true
    cat "$tmp"/esaved/*.sched >>"$out"
    "$bin" check "$real" $e --fix lock-run --bound 1 --runs 4 >>"$out" 2>&1 || true
    "$bin" check "$real" $e --fix tls-state --bound 1 --jobs 2 --json >>"$out" 2>&1 || true
    "$bin" check "$real" $e --patch "$(dirname "$0")/../../tests/data/patches/reach_works.py" --bound 1 --runs 4 >>"$out" 2>&1 || true
  }
  engine_all "$a" "$tmp/ea"
  engine_all "$b" "$tmp/eb"
  if ! cmp -s "$tmp/ea" "$tmp/eb"; then
    echo "check-determinism: $a and $b disagree on the real-code engine's reports ($py):"
    diff "$tmp/ea" "$tmp/eb" | head -20
    exit 1
  fi
  echo "check-determinism: the real-code engine's reports agree ($(wc -l <"$tmp/ea") lines, $py)"
fi
echo "check-determinism: $a and $b agree byte for byte ($(wc -l <"$tmp/a") lines of reports)"
