#!/usr/bin/env python3
"""The GIL tracer's hooks in C against its Python hooks, the reference (issue 50).

    gil_hooks_test.py RERACE PY_ROOT

Runs every bundled recording (traces/samples/*.rrt), seed 1 and, where the real-code engine
replays it, seeds 2 and 3; the brief's recording with every shipped fix, in both modes (GIL and
free-threaded), with a user's patch whose replacement a subclass bypasses (patch reach through
the hooks), and three DPOR checks, under CPython 3.12 (the sys.monitoring hooks); the fixes, the
patch, a check and two recordings under CPython 3.11 (PY_ROOT/venv: the settrace hooks); each once with RERACE_GIL_HOOKS=python and once with
RERACE_GIL_HOOKS=c (an error where the C hooks cannot load), and asserts the same output and
exit status byte for byte. FLA's recordings run with PY_ROOT/fla-core-0.6.0 on PYTHONPATH.

Exit 0 all equal, 1 a difference (the first few diffs printed), 77 skipped (no CPython 3.12 venv
or no C hooks built: RERACE_GIL_MODULE_BUILT unset).
"""

import difflib
import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXES = ["none", "lock-run", "tls-nargs", "call-local", "lock-key-future", "per-thread-tuner",
         "prewarm", "owner-thread", "tls-state", "lock-key-event"]


def main():
    rerace, py_root = sys.argv[1], sys.argv[2]
    python = os.path.join(py_root, "venv312", "bin", "python")
    if not os.path.exists(python):
        print("skip: %s is missing (tools/scripts/python-envs.sh makes it)" % python)
        return 77
    if os.environ.get("RERACE_GIL_MODULE_BUILT") != "1":
        print("skip: this build made no _rerace_gil (no CPython 3.12+ headers found by CMake)")
        return 77
    engine = ["--engine", "python", "--python-exe", python]
    fla = os.path.join(py_root, "fla-core-0.6.0")
    cases = []  # (name, argv, extra environment)
    trace = os.path.join(ROOT, "traces/samples/triton-none-h200.rrt")
    for path in sorted(glob.glob(os.path.join(ROOT, "traces/samples/*.rrt"))):
        env = {"PYTHONPATH": fla} if "fla" in os.path.basename(path) else {}
        cases.append((os.path.basename(path), ["replay", path] + engine + ["--seed", "1"], env))
    for fix in FIXES:
        for mode in ("gil", "free-threaded"):
            cases.append(("fix %s %s" % (fix, mode), ["replay", trace] + engine + [
                "--python", mode, "--fix", fix, "--seed", "2"], {}))
    cases.append(("patch reach", ["replay", trace] + engine + [
        "--patch", os.path.join(ROOT, "tests/data/patches/reach_bypassed.py"), "--seed", "3"], {}))
    for fix in ("lock-run", "tls-state", "none"):
        cases.append(("check %s" % fix, ["check", trace] + engine + [
            "--python", "gil", "--fix", fix, "--bound", "1", "--max-runs", "400"], {}))
    # CPython 3.11 (the settrace hooks: global_trace, local_trace, profile), when the venv is.
    py311 = os.path.join(py_root, "venv", "bin", "python")
    if os.path.exists(py311):
        e311 = ["--engine", "python", "--python-exe", py311, "--python", "gil"]
        for fix in FIXES:
            cases.append(("3.11 fix %s" % fix, ["replay", trace] + e311 + ["--fix", fix, "--seed", "2"], {}))
        cases.append(("3.11 patch reach", ["replay", trace] + e311 + [
            "--patch", os.path.join(ROOT, "tests/data/patches/reach_bypassed.py"), "--seed", "3"], {}))
        cases.append(("3.11 check lock-run", ["check", trace] + e311 + [
            "--fix", "lock-run", "--bound", "1", "--max-runs", "200"], {}))
        for name in ("triton-both-h200.rrt", "triton-lock-key-event-patched-h200.rrt"):
            cases.append(("3.11 " + name, ["replay", os.path.join(ROOT, "traces/samples", name)] +
                          e311 + ["--seed", "1"], {}))

    def run(argv, env, hooks):
        e = dict(os.environ, RERACE_GIL_HOOKS=hooks, RERACE_REPORT_WIDTH="0", **env)
        e.pop("RERACE_GIL_TRACER", None)
        p = subprocess.run([rerace] + argv, capture_output=True, text=True, env=e, timeout=600)
        return "exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr)

    def both(case):
        name, argv, env = case
        out = [run(argv, env, h) for h in ("python", "c")]
        # Seeds 2 and 3 where the engine replayed it (not a recording it refuses).
        if argv[0] == "replay" and argv[-1] == "1" and not out[0].startswith(("exit 64", "exit 65")):
            for seed in ("2", "3"):
                more = [run(argv[:-1] + [seed], env, h) for h in ("python", "c")]
                out = [out[i] + more[i] for i in range(2)]
        return name, out

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        results = list(pool.map(both, cases))
    bad = 0
    replayed = 0
    for name, (py, c) in results:
        if not py.startswith(("exit 64", "exit 65")):
            replayed += 1
        if py != c:
            bad += 1
            if bad <= 3:
                print("DIFFERENT: %s" % name)
                sys.stdout.writelines(difflib.unified_diff(
                    py.splitlines(True), c.splitlines(True), "python hooks", "C hooks", n=2))
    print("gil_hooks: %d cases (%d replayed by the engine), %d different" % (
        len(results), replayed, bad))
    # Bad settings: a one-line error, exit 64. RERACE_GIL_HOOKS=c where the module does not load
    # (the engine's package copied away from the build's _rerace_gil) names the variable.
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "replay/engine/python"), os.path.join(tmp, "engine"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        # Another build's module on the path (a stale _rerace_gil on a user's PYTHONPATH): its
        # protocol is not this engine's, so it is not taken for the hooks.
        os.makedirs(os.path.join(tmp, "stale"))
        with open(os.path.join(tmp, "stale", "_rerace_gil.py"), "w") as f:
            f.write("PROTOCOL = 0\n")
        argv = ["replay", trace] + engine + ["--seed", "1"]
        copy = os.path.join(tmp, "engine")
        for hooks, env, want in (("c", {"RERACE_PYTHONPATH": copy},
                                  "RERACE_GIL_HOOKS=c: _rerace_gil does not import"),
                                 ("c", {"RERACE_PYTHONPATH": copy, "PYTHONPATH": os.path.join(tmp, "stale")},
                                  "is another build's: protocol 0"),
                                 ("x", {}, "RERACE_GIL_HOOKS=x: neither c nor python")):
            out = run(argv, env, hooks)
            lines = [ln for ln in out.splitlines()[1:] if ln.strip()]
            if not out.startswith("exit 64\n") or len(lines) != 1 or want not in lines[0]:
                bad += 1
                print("RERACE_GIL_HOOKS=%s: expected exit 64 and one line with %r, got:\n%s" % (
                    hooks, want, out))
    if replayed < 20:
        print("too few cases replayed: the comparison proves little")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
