#!/usr/bin/env bash
# make demo: replay the bundled trace under a seed and show the KeyError, replay it again from
# its saved schedule alone, replay the recorded order, then the verdict of each fix.
set -uo pipefail
rerace=${1:-build/bin/rerace}
trace=traces/samples/synth-h200-shape.rrt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
expect() { # expect CODE what
  [ "$1" -eq "$2" ] || { echo "demo: expected exit $2 from $3, got $1"; exit 1; }
}

say rerace show "$trace"
"$rerace" show "$trace" | head -12
echo "  ..."

say rerace replay "$trace" --seed 3 --save-schedule "$out/keyerror.sched"
"$rerace" replay "$trace" --seed 3 --save-schedule "$out/keyerror.sched"
expect $? 1 "replay --seed 3"

say rerace replay "$trace" --schedule "$out/keyerror.sched" "| head -5   # no seed: the schedule alone"
"$rerace" replay "$trace" --schedule "$out/keyerror.sched" | head -5

say rerace replay "$trace" --recorded "| head -12"
"$rerace" replay "$trace" --recorded | head -12

for fix in none tls-nargs lock-run call-local lock-key-future prewarm owner-thread; do
  say rerace check "$trace" --fix "$fix" "| grep -E 'verdict|FAILED|cost|^  [A-Z]'"
  "$rerace" check "$trace" --fix "$fix" | grep -E 'verdict|FAILED|cost|^  [A-Z][a-zA-Z]*Error'
done
echo
echo "demo: the H200's verdicts, reproduced on a CPU: unpatched fails (KeyError: 'y_ptr'),"
echo "demo: thread-local nargs (triton issue 11494) still fails, a lock around Autotuner.run holds."
