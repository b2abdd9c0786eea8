#!/usr/bin/env python3
"""Checks the nightly fuzz workflow (docs/ci/nightly-fuzz.yml) the way GitHub would run it.

  nightly-dry-run.py RERACE_BIN [WORKFLOW]

1. actionlint, when it is on PATH (it is not packaged for Debian, and PyPI's wrapper builds it
   from source with Go: so usually absent, and said so).
2. Structure: every job has runs-on and steps; each step uses an action or runs a script; `needs`
   names a job; `${{ matrix.X }}` names a key of the job's matrix; a job that runs rerace
   checks out and builds it first; upload and download steps that must run after a failure say
   `if: always()`.
3. A dry run: each job in its own empty workspace (as GitHub gives each job a fresh machine),
   each matrix entry in turn, `run:` steps under `bash --noprofile --norc -eo pipefail` (GitHub's
   bash), the build replaced by the RERACE_BIN given, `--time 10m` by `--runs 12`, FIXES as the
   file has them (a placeholder must run as copied), traces/ holding the bundled synthetic
   trace, artifacts passed from job to job. A build of a workflow that never runs
   `--engine python` must skip the Python environments (PYTHON_ENVS=OFF), and then name the
   model (`--engine model`) in each fuzz, check and replay, the default being `--engine auto`.
   Then: every fuzz step exits 0 although both fixes find failures; the merge step exits 1 (a
   failure found) after merging both fixes, each over 4 shards x 12 runs; saved schedules of the
   two fixes do not overwrite each other.

Exit 0 when all holds, 1 with the first problem otherwise, 77 (a ctest skip) without PyYAML.
"""
import glob
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("nightly-dry-run: skipped: PyYAML is not installed (python3 -m pip install pyyaml)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RUNS = 12


def fail(msg):
    print(f"nightly-dry-run: {msg}")
    sys.exit(1)


def load(path):
    with open(path) as f:
        wf = yaml.safe_load(f)
    # YAML 1.1 reads the key `on` as True.
    if True in wf:
        wf["on"] = wf.pop(True)
    return wf


def check_structure(wf):
    for key in ("name", "on", "jobs"):
        if key not in wf:
            fail(f"the workflow has no '{key}'")
    jobs = wf["jobs"]
    python_engine = "--engine python" in yaml.safe_dump(wf)
    for name, job in jobs.items():
        if "runs-on" not in job or not job.get("steps"):
            fail(f"job {name}: needs runs-on and steps")
        for need in [job["needs"]] if isinstance(job.get("needs"), str) else job.get("needs", []):
            if need not in jobs:
                fail(f"job {name}: needs '{need}', which is not a job")
        matrix = job.get("strategy", {}).get("matrix", {})
        checked_out = built = False
        for i, step in enumerate(job["steps"]):
            where = f"job {name} step {i + 1} ({step.get('name', step.get('uses', 'run'))})"
            if ("uses" in step) == ("run" in step):
                fail(f"{where}: a step either uses an action or runs a script")
            text = yaml.safe_dump(step)
            for key in re.findall(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", text):
                if key not in matrix:
                    fail(f"{where}: ${{{{ matrix.{key} }}}} but the job's matrix has no '{key}'")
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                checked_out = True
            run = step.get("run", "")
            if "make -C rerace build" in run:
                if not checked_out:
                    fail(f"{where}: builds rerace before any checkout")
                if "PYTHON_ENVS=OFF" not in run and not python_engine:
                    fail(f"{where}: the workflow runs rerace's C++ models only, but its build "
                         "installs the python engine's environments (4.4 GB): add PYTHON_ENVS=OFF")
                built = True
            elif "rerace/build/bin/rerace" in run and not built:
                fail(f"{where}: runs rerace, but the job has not checked out and built it")
            for cmd in re.findall(r"rerace/build/bin/rerace (?:fuzz|check|replay)[^\n]*", run):
                if "--engine" not in cmd and not python_engine:
                    fail(f"{where}: '{cmd.strip()}' runs the default engine (auto: Triton's real "
                         "code where a Python with it is found) in a build without the Python "
                         "environments: say --engine model")
            if uses.startswith("actions/upload-artifact@") and "always()" not in str(step.get("if", "")):
                fail(f"{where}: uploads results without 'if: always()' (a fuzz step that finds "
                     "failures would lose them)")
        if job.get("needs") and "always()" not in str(job.get("if", "")):
            fail(f"job {name}: runs after {job['needs']} only when it succeeded; add 'if: always()'")


def order(jobs):
    done, out = set(), []
    while len(out) < len(jobs):
        for name, job in jobs.items():
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            if name not in done and all(n in done for n in needs):
                done.add(name)
                out.append(name)
    return out


def expand(text, matrix):
    def sub(m):
        expr = m.group(1).strip()
        if expr.startswith("matrix."):
            return str(matrix[expr[len("matrix."):]])
        fail(f"the dry run does not know the expression ${{{{ {expr} }}}}")
    return re.sub(r"\$\{\{(.*?)\}\}", sub, text)


def dry_run(wf, rerace):
    top = tempfile.mkdtemp(prefix="rerace-nightly-")
    artifacts = os.path.join(top, "artifacts")
    os.makedirs(artifacts)
    env = dict(os.environ)
    env.update({k: str(v) for k, v in wf.get("env", {}).items()})
    env["NO_PROGRESS"] = "1"
    codes = {}  # (job, matrix entry, step name) -> exit code
    for name in order(wf["jobs"]):
        job = wf["jobs"][name]
        matrix = job.get("strategy", {}).get("matrix", {})
        keys = sorted(matrix)
        for values in itertools.product(*(matrix[k] for k in keys)) if keys else [()]:
            entry = dict(zip(keys, values))
            ws = os.path.join(top, f"{name}-{'-'.join(map(str, values)) or 'job'}")
            os.makedirs(os.path.join(ws, "traces"))
            shutil.copy(os.path.join(ROOT, "traces/samples/synth-h200-shape.rrt"), os.path.join(ws, "traces"))
            os.makedirs(os.path.join(ws, "rerace/build/bin"))
            os.symlink(os.path.abspath(rerace), os.path.join(ws, "rerace/build/bin/rerace"))
            failed = False
            for step in job["steps"]:
                label = step.get("name", step.get("uses", "run"))
                if failed and "always()" not in str(step.get("if", "")):
                    continue
                uses = step.get("uses", "")
                if uses.startswith("actions/checkout@"):
                    continue
                if uses.startswith("actions/upload-artifact@"):
                    w = step["with"]
                    dest = os.path.join(artifacts, expand(str(w["name"]), entry))
                    os.makedirs(dest, exist_ok=True)
                    for pattern in expand(str(w["path"]), entry).split():
                        for p in glob.glob(os.path.join(ws, pattern)):
                            target = os.path.join(dest, os.path.basename(p))
                            (shutil.copytree if os.path.isdir(p) else shutil.copy)(p, target)
                    continue
                if uses.startswith("actions/download-artifact@"):
                    w = step["with"]
                    if not w.get("merge-multiple"):
                        fail(f"job {name}: the dry run knows download-artifact with merge-multiple only")
                    dest = os.path.join(ws, w["path"])
                    os.makedirs(dest, exist_ok=True)
                    for art in sorted(os.listdir(artifacts)):
                        shutil.copytree(os.path.join(artifacts, art), dest, dirs_exist_ok=True)
                    continue
                if uses:
                    fail(f"job {name}: the dry run does not know the action {uses}")
                script = expand(step["run"], entry)
                if "make -C rerace build" in script:
                    continue  # the binary given stands for the build
                script = script.replace("--time 10m", f"--runs {RUNS}")
                with open(os.path.join(ws, "step.sh"), "w") as f:
                    f.write(script)
                r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "step.sh"],
                                   cwd=ws, env=env, capture_output=True, text=True, timeout=600)
                codes[(name, str(entry), label)] = r.returncode
                print(f"nightly-dry-run: {name} {entry or ''} '{label}': exit {r.returncode}")
                if r.returncode != 0:
                    if r.stderr.strip():
                        print(r.stderr.strip()[-2000:])
                    failed = True
    return top, codes


def main():
    if len(sys.argv) < 2:
        fail("usage: nightly-dry-run.py RERACE_BIN [WORKFLOW]")
    rerace = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs/ci/nightly-fuzz.yml")
    if shutil.which("actionlint"):
        r = subprocess.run(["actionlint", path], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"actionlint:\n{r.stdout}{r.stderr}")
        print("nightly-dry-run: actionlint passed")
    else:
        print("nightly-dry-run: actionlint is not on PATH (not packaged for Debian): structure "
              "checked here instead")
    wf = load(path)
    check_structure(wf)
    top, codes = dry_run(wf, rerace)
    try:
        fuzz = {k: v for k, v in codes.items() if k[0] == "fuzz"}
        merge = {k: v for k, v in codes.items() if k[0] == "merge"}
        if len(fuzz) != 4 or any(v != 0 for v in fuzz.values()):
            fail(f"every fuzz shard's steps should exit 0 (failures found are reported by merge): {fuzz}")
        if len(merge) != 1 or list(merge.values())[0] != 1:
            fail(f"the merge step should exit 1 (failures found): {merge}")
        merge_ws = os.path.join(top, "merge-job")
        for fix in ("none", "tls-nargs"):
            with open(os.path.join(merge_ws, f"merged-{fix}.json")) as f:
                merged = json.load(f)
            runs = sum(t["runs"] for t in merged["traces"])
            if runs != 4 * RUNS:
                fail(f"merged-{fix}.json: {runs} runs, expected 4 shards x {RUNS}")
            if not os.path.exists(os.path.join(merge_ws, f"merged-{fix}.xml")):
                fail(f"merged-{fix}.xml was not written")
        for shard in range(4):
            saved = os.listdir(os.path.join(merge_ws, "results", f"failures-{shard}"))
            for fix in ("none", "tls-nargs"):
                if not any(n.startswith(f"synth-h200-shape-{fix}-") for n in saved):
                    fail(f"failures-{shard} holds no schedule of fix {fix}: {sorted(saved)}")
        print("nightly-dry-run: the workflow's steps ran: 4 shards x 2 fixes, merged, failures kept apart")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
