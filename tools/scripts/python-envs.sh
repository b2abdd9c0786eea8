#!/usr/bin/env bash
# The Python environments of the real-code engine (--engine python) and its tests, all inside
# the build tree, never in the system Python. Safe to run again; what cannot be installed is
# said, and the tests that need it skip with that reason.
#   build/py/venv            a venv of python3 with Triton 3.6.0: the Python the tests run
#   build/py/venv312         a venv of CPython 3.12 (pyenv's, when present) with Triton 3.6.0:
#                            the H200's interpreter version, for the GIL-mode tests
#                            (both venvs also get `packaging`, which FLA's cache.py imports,
#                            and `greenlet`, the engine's logical threads on 3.12+)
#   build/py/triton-<v>      Triton <v> alone (pip --target), put first on PYTHONPATH to replay
#                            under another release: 3.2.0, 3.4.0, 3.8.0, 3.9.0
#   build/py/fla-core-<v>    FLA's fla-core <v> alone (pip --target, no dependencies): the source
#                            tools/scripts/step-table.py checks the fla model against: 0.5.2, 0.6.0
set -uo pipefail
root=${1:-build/py}
base=${RERACE_BASE_PYTHON:-python3}
mkdir -p "$root"
pipq() { "$1" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

venv() {  # venv DIR PYTHON
  local dir=$1 py=$2
  [ -x "$dir/bin/python" ] || "$py" -m venv "$dir" || { echo "python-envs: cannot create $dir with $py"; return 1; }
  if ! "$dir/bin/python" -c 'import triton, sys; sys.exit(triton.__version__ != "3.6.0")' 2>/dev/null; then
    echo "python-envs: installing triton==3.6.0 into $dir"
    pipq "$dir/bin/python" triton==3.6.0 || echo "python-envs: triton 3.6.0 not installed in $dir"
  fi
  # packaging: FLA's cache.py imports it (fla-core below is installed without dependencies);
  # a venv of a pyenv CPython does not bring it. Checked first, so a run that finds it installs
  # nothing.
  "$dir/bin/python" -c 'import packaging.version' 2>/dev/null ||
    pipq "$dir/bin/python" packaging ||
    echo "python-envs: packaging not installed in $dir; FLA's CachedAutotuner is refused there (its tests skip)"
  # greenlet: on CPython 3.12+ the engine's logical threads are greenlets when it imports (no
  # kernel in a hand-over; docs/ENGINE.md); without it they are OS threads (same reports).
  "$dir/bin/python" -c 'import greenlet' 2>/dev/null ||
    pipq "$dir/bin/python" "greenlet>=3.0" ||
    echo "python-envs: greenlet not installed in $dir; the engine runs OS threads there (its greenlet tests skip)"
}

venv "$root/venv" "$base"
# PyYAML: the nightly workflow's dry-run test reads docs/ci/nightly-fuzz.yml with it; setuptools
# and wheel: no test needs them now (the pip package is `make test-pip`'s, with PyPI).
"$root/venv/bin/python" -c 'import yaml, wheel, setuptools' 2>/dev/null ||
  pipq "$root/venv/bin/python" pyyaml wheel "setuptools>=61" ||
  echo "python-envs: pyyaml/wheel/setuptools not installed; the workflow and packaging tests will skip"
# jsonschema: the json_schema test validates every command's --json against docs/schema.
"$root/venv/bin/python" -c 'import jsonschema' 2>/dev/null ||
  pipq "$root/venv/bin/python" "jsonschema>=4.18" ||
  echo "python-envs: jsonschema not installed; the json_schema test will skip"
py312=""
for c in python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python3" /root/.pyenv/versions/3.12.*/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    py312=$c; break
  fi
done
if [ -n "$py312" ]; then venv "$root/venv312" "$py312"; else echo "python-envs: no CPython 3.12 here; its tests will skip"; fi

for v in 3.2.0 3.4.0 3.8.0 3.9.0; do
  d="$root/triton-$v"
  [ -f "$d/.complete" ] && continue
  echo "python-envs: installing triton==$v into $d"
  rm -rf "$d"
  if pipq "$root/venv/bin/python" --no-deps --target "$d" "triton==$v"; then
    touch "$d/.complete"
  else
    echo "python-envs: triton $v not installed; its tests will skip"
  fi
done
for v in 0.5.2 0.6.0; do
  d="$root/fla-core-$v"
  [ -f "$d/.complete" ] && continue
  echo "python-envs: installing fla-core==$v into $d"
  rm -rf "$d"
  if pipq "$root/venv/bin/python" --no-deps --target "$d" "fla-core==$v"; then
    touch "$d/.complete"
  else
    echo "python-envs: fla-core $v not installed; its step-table check will skip"
  fi
done
exit 0
