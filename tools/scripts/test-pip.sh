#!/usr/bin/env bash
# make test-pip: `pip install .` into a fresh venv (build/pip-venv), then, from a folder outside
# the source tree with no source tree on the path: `rerace --help`, `import rerace`, the
# installed rerace finds its installed engine and probe (no source-tree path in the binary),
# and the example project's pytest (examples/pytest-triton): the good patch's tests pass
# (exit 0), the bad patch's test fails (exit 1) printing the counterexample and its replay
# command.
#   RERACE_VENV_PYTHON=/path/to/python3   the Python of the venv (default build/py/venv312's, else
#   python3). NB: not PIP_PYTHON: pip reads every PIP_* variable as an option (--python).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cd "$SRC"
# pip takes PIP_* from the environment as options: none may send it into another environment.
unset PIP_PYTHON PIP_TARGET PIP_PREFIX PIP_USER PIP_ROOT
PY=${RERACE_VENV_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x build/py/venv312/bin/python ]; then PY=build/py/venv312/bin/python; else PY=python3; fi
fi
VENV=$SRC/build/pip-venv
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
start=$(date +%s)
"$VENV/bin/pip" install . 2>&1 | tail -3
echo "test-pip: pip install . took $(( $(date +%s) - start )) s"
"$VENV/bin/pip" install -q triton==3.6.0 pytest

fail() { echo "test-pip: FAILED: $*" >&2; exit 1; }
OUTSIDE=$(mktemp -d)
trap 'rm -rf "$OUTSIDE"' EXIT
cd "$OUTSIDE"
unset PYTHONPATH RERACE_PYTHONPATH RERACE_EXE RERACE_PROBE_DIR
export PATH="$VENV/bin:$PATH"

[ "$(command -v rerace)" = "$VENV/bin/rerace" ] || fail "rerace on PATH is $(command -v rerace), not the venv's"
help=$(rerace --help) || fail "rerace --help exited $?"
echo "${help%%$'\n'*}"
! grep -aq "$SRC" "$VENV/bin/rerace" || fail "the installed rerace has the source tree's path compiled in"
python -c "
import rerace, rerace._core, rerace_real, rerace_probe, sys
for m in (rerace, rerace._core, rerace_real, rerace_probe):
    assert m.__file__.startswith(sys.prefix), (m.__name__, m.__file__)
assert rerace.find_exe() == sys.prefix + '/bin/rerace', rerace.find_exe()
t = rerace.Trace('$SRC/traces/samples/triton-none-h200.rrt')
print('import rerace:', rerace.__file__, t)
"
[ -f "$VENV/share/rerace/python/rerace_real/serve.py" ] || fail "no engine in $VENV/share/rerace/python"
usage=$(python -m rerace_real --help) || fail "python -m rerace_real --help exited $?"
echo "${usage%%$'\n'*}"

EX=$SRC/examples/pytest-triton
set +e
python -m pytest -p no:cacheprovider -q "$EX"
good=$?
python -m pytest -p no:cacheprovider -q "$EX" -m bad_patch > bad.log 2>&1
bad=$?
set -e
tail -25 bad.log
[ $good -eq 0 ] || fail "the good patch's tests exited $good, expected 0"
[ $bad -eq 1 ] || fail "the bad patch's test exited $bad, expected 1 (a failed test)"
grep -q -- "- rerace -" bad.log && grep -q "FAILS" bad.log || fail "the bad patch's failure does not print the plugin's rerace section with the verdict"
grep -q "replay it: rerace replay" bad.log || fail "the bad patch's failure does not print the replay command"
echo "test-pip: ok (good patch: exit 0; bad patch: exit 1 with its counterexample)"
