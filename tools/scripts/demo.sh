#!/usr/bin/env bash
# make demo: replay a trace recorded on an H200 (Triton 3.6, eight threads, one autotuned
# kernel, cold cache): the recorded KeyError reproduced on a CPU, a seeded schedule that hits
# it and its saved schedule replayed alone, then the verdict of each fix; the native C++ step
# and FLA's CachedAutotuner recorded on the GPU; the real-code engine.
set -uo pipefail
rerace=${1:-build/bin/rerace}
trace=traces/samples/triton-none-h200.rrt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
expect() { [ "$1" -eq "$2" ] || { echo "demo: expected exit $2 from $3, got $1"; exit 1; }; }

say rerace show "$trace" "| head -24"
"$rerace" show "$trace" | grep -vE '^      device' | head -24

say rerace replay "$trace" --recorded "| head -14   # the GPU's interleaving, on this CPU"
"$rerace" replay "$trace" --recorded | head -14

say rerace replay "$trace" --seed 3 --save-schedule "$out/keyerror.sched" "| head -8"
"$rerace" replay "$trace" --seed 3 --save-schedule "$out/keyerror.sched" | head -8
"$rerace" replay "$trace" --seed 3 >/dev/null
expect $? 1 "replay --seed 3"

say rerace replay "$trace" --schedule "$out/keyerror.sched" "| head -4   # no seed: the schedule alone"
"$rerace" replay "$trace" --schedule "$out/keyerror.sched" | head -4

for fix in none tls-nargs lock-run call-local lock-key-future prewarm owner-thread; do
  say rerace check "$trace" --fix "$fix" "| grep -E 'verdict|FAILED|cost|Error'"
  "$rerace" check "$trace" --fix "$fix" | grep -E 'verdict|FAILED|cost|^  [A-Z][a-zA-Z]*Error'
done
say rerace check "$trace" --fix lock-run --threads 3 "| grep -E '^verdict' | cut -c1-150   # a certificate: every interleaving of any 3 of the 8 threads"
"$rerace" check "$trace" --fix lock-run --threads 3 2>/dev/null | grep -E '^verdict' | cut -c1-150
native=traces/samples/native-none-h200.rrt
say rerace replay "$native" --recorded "| grep -E 'FAILED|summary|also: in-param' | head -3   # rerace's C++ training step, recorded on the H200"
"$rerace" replay "$native" --recorded | grep -E '^FAILED|^summary|^also: in-param' | head -3
for fix in tls-nargs lock-key-future lock-run; do
  say rerace check "$native" --fix "$fix" "| grep verdict"
  "$rerace" check "$native" --fix "$fix" | grep -E '^verdict'
done
fla=traces/samples/restore-fla-none-h200.rrt
say rerace replay "$fla" --recorded "| grep -E '^FAILED|^summary|^recorded comparison'   # FLA's CachedAutotuner, the incident's class, recorded on the H200"
"$rerace" replay "$fla" --recorded | grep -E '^FAILED|^summary|^recorded comparison'
say rerace check "$fla" --fix tls-nargs "| grep -E '^verdict|^FAILED'   # on the H200: no raise, but every thread's y wrong"
"$rerace" check "$fla" --fix tls-nargs | grep -E '^verdict|^FAILED'
say rerace check "$fla" --fix lock-run "| grep -E '^verdict'"
"$rerace" check "$fla" --fix lock-run | grep -E '^verdict' | cut -c1-160
py=build/py/venv/bin/python
if [ -x "$py" ]; then
  say rerace replay "$trace" --engine python --python-exe "$py" --seed 3 "| head -5   # another interpreter: CPython 3.11's build/py/venv"
  "$rerace" replay "$trace" --engine python --python-exe "$py" --seed 3 2>&1 | head -6
  for fix in tls-nargs lock-run; do
    say rerace fuzz "$trace" --engine python --python-exe "$py" --fix "$fix" --runs 20 "| grep -E 'runs,|^  \[1\]'   # the fix as a patch file: replay/engine/python/rerace_real/fixes/"
    "$rerace" fuzz "$trace" --engine python --python-exe "$py" --fix "$fix" --runs 20 2>/dev/null | grep -E 'runs,|^  \[1\]'
  done
  patched=traces/samples/triton-lock-run-patched-h200.rrt
  say rerace replay "$patched" "   # a recording of a patched program: the engine runs the patch the recording names (here rerace's own lock_run), never stock code in its place"
  "$rerace" replay "$patched" 2>&1 | cut -c1-160
else
  echo "demo: $py is missing (tools/scripts/python-envs.sh): the real-code engine's part is skipped"
fi
echo
echo "demo: the H200's verdicts, reproduced on a CPU from one recorded step: unpatched fails"
echo "demo: (a silent wrong-restore first, then KeyError: 'y_ptr' in the same 7 of 8 threads as on"
echo "demo: the GPU), thread-local nargs (triton issue 11494) still fails, a lock around"
echo "demo: Autotuner.run holds, for every interleaving of any 3 threads. The native C++ step (8 real"
echo "demo: runs per fix, docs/FIDELITY.md) agrees: tls-nargs and lock-key-future fail, lock-run holds."
echo "demo: FLA's CachedAutotuner on the H200 raised TypeError in 7 of 8 threads and left every y"
echo "demo: wrong; rerace reproduces the 7 from the recording; tls-nargs fails there too, lock-run holds."
echo "demo: By default (--engine auto) a Triton recording runs Triton's own code from build/py, a fix"
echo "demo: as a patch file (replay/engine/python/rerace_real/fixes/), and the first lines say so; a fix with"
echo "demo: no patch file, the native step and --recorded run rerace's C++ model (docs/ENGINE.md)."
