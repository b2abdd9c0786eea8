"""Issue 31, item 1: a GPU experiment in which a restore matters.

The brief's l2norm kernel writes its whole output, so a wrong or missed restore of ``y_ptr`` is
overwritten by the final launch and never shows. Here the kernel updates its ``restore_value``
argument in place, ``y += x * w``: every benchmark launch adds ``x * w`` once more, and only the
post-hook's restore of the copy saved before benchmarking brings ``y`` back. After the call each
thread's ``y`` must hold ``y0 + x * w`` exactly once; it is compared with that reference
computed in float64. Each thread has its own data, and thread i's ``y0`` is offset by
``1000 * (i + 1)``, so a wrong ``y`` says what it holds:

  ok              y0_i + 1 * x_i w_i (within the tolerance of float32 arithmetic)
  missed-restore  y0_i + k * x_i w_i with k > 1: benchmark launches left their sums in y
  not-updated     y0_i: the final launch never added x_i w_i (k = 0; after an exception, say)
  wrong-restore   y0_j + k * x_i w_i with j != i: another thread's saved copy was restored
  other           none of these

What runs:

  --release R   3.6: the installed Triton's ``autotuner.py`` (expected 3.6.x); 3.8 or 3.9: that
                release's ``triton/runtime/autotuner.py`` loaded over the installed compiler as
                ``triton.runtime.autotuner`` (the release tables of docs/FIDELITY.md were taken
                the same way: the tuner's logic of a release, the compiler and driver installed).
                The file is looked for in --autotuner-src, $RERACE_TRITON_SRC, then
                REPO/.devsrc/triton-<v>/triton/runtime/autotuner.py (h200-gpu-settle.sh --prepare
                copies it there; the path keeps "triton/runtime/" for the probe's file:line)
                and REPO/build/py/triton-<v>/triton/runtime/autotuner.py (python-envs.sh).
  --fix NAME    none, prewarm, or a patch file of replay/engine/python/rerace_real/fixes (lock-run,
                tls-nargs, tls-state, lock-key-event); --patch FILE for another (repeatable).
  --fla         the kernel decorated by FLA's ``fla_cache_autotune`` (``CachedAutotuner``), with
                FLA_CONFIG_DIR an empty folder and FLA_CACHE_MODE=full (cold: every lookup misses
                and falls back to Triton's tuning, through ``CachedAutotuner.run``).

Each trial makes a new tuner (a cold cache), releases --threads threads at a barrier, and
prints one JSON line: the trial's exceptions counted by "Type at file:line function", the wrong
threads with their class and max abs error, and each thread's record. Exit 0 whatever happened
(64 on a usage error).

Usage: python3 restore_matters.py --release 3.6 --fix none --trials 8 [--threads 8] [--fla]

The pure-Python parts (arguments, the float64 reference, the classification) import neither
torch nor triton; tests/python/test_restore_matters.py tests them on a CPU.
"""

import argparse
import collections
import importlib.util
import json
import math
import os
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXES_DIR = os.path.join(REPO, "replay", "engine", "python", "rerace_real", "fixes")
RELEASES = {"3.6": "3.6", "3.8": "3.8.0", "3.9": "3.9.0"}
FIXES = ["none", "prewarm", "lock-run", "tls-nargs", "tls-state", "lock-key-event"]
OFFSET = 1000.0  # thread i's y0 is OFFSET * (i + 1) + noise
RTOL, ATOL = 1e-5, 1e-3


# ---- arguments ------------------------------------------------------------------------------

def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", default="3.6", choices=sorted(RELEASES),
                    help="whose autotuner.py logic runs over the installed compiler")
    ap.add_argument("--autotuner-src", metavar="FILE", help="the release's autotuner.py (3.8, 3.9)")
    ap.add_argument("--fix", default="none", choices=FIXES)
    ap.add_argument("--patch", action="append", default=[], metavar="FILE",
                    help="a patch file imported before the kernel is built (repeatable)")
    ap.add_argument("--fla", action="store_true", help="FLA's CachedAutotuner (fla_cache_autotune)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--n", type=int, default=1 << 14, help="elements of x, w, y per thread (the key)")
    ap.add_argument("--configs", type=int, default=12, help="the first N of the 12 configs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE", help="also append each trial's line to FILE")
    return ap


def parse_args(argv=None):
    """Parsed arguments; argparse's exit 2 is turned into 64 (usage), as rerace's tools."""
    ap = parser()
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        raise SystemExit(64 if e.code else 0)
    errors = []
    if a.threads < 1:
        errors.append("--threads: at least 1")
    if a.trials < 1:
        errors.append("--trials: at least 1")
    if a.n < 1:
        errors.append("--n: at least 1")
    if not 1 <= a.configs <= 12:
        errors.append("--configs: 1 to 12")
    if a.autotuner_src and a.release == "3.6":
        errors.append("--autotuner-src: only with --release 3.8 or 3.9 (3.6 is the installed one)")
    if errors:
        ap.print_usage(sys.stderr)
        for e in errors:
            print("restore_matters.py: error: %s" % e, file=sys.stderr)
        raise SystemExit(64)
    return a


def patch_files(a):
    """The patch files to import, in order: the named fix's, then --patch's."""
    files = []
    if a.fix not in ("none", "prewarm"):
        spec = importlib.util.spec_from_file_location("_rerace_fixes_index", os.path.join(FIXES_DIR, "__init__.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        files.append(mod.path(a.fix))
    return files + list(a.patch)


def autotuner_source(release, explicit=None, env=None, repo=REPO):
    """The autotuner.py of `release` (3.8 or 3.9): the first that exists of --autotuner-src,
    $RERACE_TRITON_SRC (a file, or a folder holding triton-<v>/triton/runtime/autotuner.py), the
    carried copy,
    the python-envs.sh wheel. SystemExit(65) naming every place looked at when none does."""
    v = RELEASES[release]
    env = os.environ if env is None else env
    tried = []
    if explicit:
        tried.append(explicit)
    src = env.get("RERACE_TRITON_SRC")
    if src:
        tried.append(src if src.endswith(".py") else os.path.join(src, "triton-%s" % v, "triton", "runtime", "autotuner.py"))
    tried.append(os.path.join(repo, ".devsrc", "triton-%s" % v, "triton", "runtime", "autotuner.py"))
    tried.append(os.path.join(repo, "build", "py", "triton-%s" % v, "triton", "runtime", "autotuner.py"))
    for p in tried:
        if os.path.isfile(p):
            return p
    raise SystemExit("restore_matters.py: no autotuner.py of Triton %s: looked at %s; run "
                     "tools/scripts/h200-gpu-settle.sh --prepare (copies it to .devsrc/) or pass "
                     "--autotuner-src" % (v, ", ".join(tried)))


# ---- the reference and the classification (pure Python) ----------------------------------------

def make_inputs(n, threads, seed):
    """Each thread's (x, w, y0) as lists of floats, from a portable generator: x and w in
    [0.5, 1.5) (so x * w is never near 0 and k can be read back), y0 = OFFSET * (i + 1) + [0, 1)."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(threads):
        x = [0.5 + rng.random() for _ in range(n)]
        w = [0.5 + rng.random() for _ in range(n)]
        y0 = [OFFSET * (i + 1) + rng.random() for _ in range(n)]
        out.append((x, w, y0))
    return out


def reference(x, w, y0):
    """y0 + x * w in float64 (Python floats), elementwise."""
    return [b + p * q for p, q, b in zip(x, w, y0)]


def tolerance(ref):
    return ATOL + RTOL * abs(ref)


def max_abs_error(y, ref):
    return max((abs(a - b) for a, b in zip(y, ref)), default=0.0)


F32_EPS = 1.2e-7  # float32's relative rounding, per addition


def _residual_ok(y, base, xw, k):
    """y == base + k * xw up to float32 rounding of k additions (each at most an eps of the value)."""
    return all(abs(a - (b + k * p)) <= ATOL + F32_EPS * abs(b + k * p) * max(1, k) for a, b, p in zip(y, base, xw))


def classify(y, i, xws, y0s):
    """What thread i's y holds: a dict with 'kind' (ok, missed-restore, not-updated,
    wrong-restore, other), 'max_abs_err' against the float64 reference, and, where read back,
    'base' (whose y0) and 'k' (how many x_i w_i were added). y, xws[j], y0s[j]: lists of floats.
    The base is the thread whose y0 leaves the smallest residual once k (the median of the
    elementwise (y - y0_j) / x_i w_i, rounded) is taken out; thread i first on a tie."""
    xw = xws[i]
    ref = [b + p for b, p in zip(y0s[i], xw)]
    err = max_abs_error(y, ref)
    if all(abs(a - r) <= tolerance(r) for a, r in zip(y, ref)):
        return {"kind": "ok", "max_abs_err": err, "base": i, "k": 1}
    best = None
    for j in [i] + [j for j in range(len(y0s)) if j != i]:
        ks = sorted(round((a - b) / p) for a, b, p in zip(y, y0s[j], xw))
        if not ks:
            continue
        k = ks[len(ks) // 2]
        if k < 0:
            continue
        res = max(abs(a - (b + k * p)) for a, b, p in zip(y, y0s[j], xw))
        if best is None or res < best[0]:
            best = (res, j, k)
    if best is not None and _residual_ok(y, y0s[best[1]], xw, best[2]):
        _, j, k = best
        kind = "wrong-restore" if j != i else ("not-updated" if k == 0 else "missed-restore")
        return {"kind": kind, "max_abs_err": err, "base": j, "k": k}
    return {"kind": "other", "max_abs_err": err}


def where(exc):
    """'file:line function' of the innermost frame, the path cut at triton/ or fla/."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    path = f.filename
    for pkg in ("triton/", "fla/", ".devsrc/"):
        cut = path.rfind(pkg)
        if cut >= 0:
            path = path[cut:]
            break
    else:
        path = os.path.basename(path)
    return "%s:%d %s" % (path, f.lineno, f.name)


def summarize(records):
    """One trial's summary from its per-thread records (each: 'thread', 'error' None or
    {'type', 'where', 'message'}, 'result' from classify or None when not checked)."""
    exceptions = collections.Counter()
    wrong = []
    kinds = collections.Counter()
    for r in records:
        if r.get("error"):
            exceptions["%s at %s" % (r["error"]["type"], r["error"]["where"])] += 1
        res = r.get("result")
        if res is None:
            kinds["not-checked"] += 1
            continue
        kinds[res["kind"]] += 1
        if res["kind"] != "ok":
            wrong.append({"thread": r["thread"], "kind": res["kind"], "max_abs_err": res["max_abs_err"],
                          "base": res.get("base"), "k": res.get("k"), "raised": bool(r.get("error"))})
    return {"exceptions": dict(sorted(exceptions.items())),
            "threads_raised": sum(1 for r in records if r.get("error")),
            "wrong": wrong,
            "wrong_silent": sum(1 for w in wrong if not w["raised"]),
            "kinds": dict(sorted(kinds.items()))}


# ---- the GPU side --------------------------------------------------------------------------

def load_release(release, src=None):
    """Makes `release`'s autotuner logic the one ``triton.runtime.autotuner`` names. 3.6: the
    installed module (a note when the installed Triton is not 3.6). 3.8, 3.9: the release's file
    executed as ``triton.runtime.autotuner`` over the installed package (its relative imports
    resolve to the installed compiler), then ``triton.autotune``, ``triton.Config`` and
    ``triton.heuristics`` rebound to it, and, under ``rerace record --probe triton``, the
    probe's wrappers put on its ``Autotuner`` (the probe wrapped the installed one at import).
    NB: the recording's metadata still names the installed Triton version: replay such a
    recording with ``--model triton-3.8`` / ``triton-3.9``, not ``auto``. Must run before any
    patch or FLA is imported.
    Returns (module, a one-line description)."""
    import triton
    import triton.runtime

    if release == "3.6":
        from triton.runtime import autotuner

        note = "" if triton.__version__.startswith("3.6") else " (NB: installed Triton is %s)" % triton.__version__
        return autotuner, "installed %s%s" % (autotuner.__file__, note)
    path = autotuner_source(release, src)
    shims = knob_shims(path)
    name = "triton.runtime.autotuner"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "triton.runtime"
    old = sys.modules.get(name)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        if old is not None:
            sys.modules[name] = old
        raise
    triton.runtime.autotuner = mod
    for attr in ("Autotuner", "Config", "autotune", "heuristics", "Heuristics"):
        if hasattr(mod, attr) and hasattr(triton.runtime, attr):
            setattr(triton.runtime, attr, getattr(mod, attr))
    triton.autotune = mod.autotune
    triton.Config = mod.Config
    triton.heuristics = mod.heuristics
    probe = sys.modules.get("rerace_probe")  # under rerace record --probe triton: wrap this class too
    if probe is not None and hasattr(probe, "patch_autotuner") and getattr(probe, "_enabled", False):
        probe.patch_autotuner(mod)
    return mod, "Triton %s logic from %s over the installed compiler %s%s" % (
        RELEASES[release], path, triton.__version__, "; shims: " + ", ".join(shims) if shims else "")


def knob_shims(path):
    """The knobs the release's autotuner.py reads (``knobs.GROUP.NAME``) that the installed
    Triton lacks, added to the installed group's class as None (their default in the release:
    3.8 and 3.9 read ``knobs.autotuning.listener``, which 3.6 has not, after every tuning).
    Returns what was added, as 'knobs.GROUP.NAME=None'."""
    import re

    from triton import knobs

    added = []
    with open(path) as f:
        wanted = sorted(set(re.findall(r"\bknobs\.([a-z_]+)\.([a-z_]+)\b", f.read())))
    for group, knob in wanted:
        g = getattr(knobs, group, None)
        if g is None:
            raise SystemExit("restore_matters.py: %s reads knobs.%s, a group the installed Triton lacks"
                             % (path, group))
        if not hasattr(g, knob):
            setattr(type(g), knob, None)
            added.append("knobs.%s.%s=None" % (group, knob))
    return added


def load_patch(path):
    name = "rerace_patch_" + os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def make_kernel(configs, fla=False):
    import triton
    import triton.language as tl

    cfgs = [triton.Config({"BLOCK": b}, num_warps=nw) for b in (256, 512, 1024) for nw in (1, 2, 4, 8)][:configs]
    if fla:
        from fla.ops.utils.cache import fla_cache_autotune as autotune
    else:
        autotune = triton.autotune

    @autotune(configs=cfgs, key=["N"], restore_value=["y_ptr"])
    @triton.jit
    def axpy_inplace_kernel(x_ptr, w_ptr, y_ptr, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        x = tl.load(x_ptr + offs, mask=mask)
        w = tl.load(w_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, y + x * w, mask=mask)

    return axpy_inplace_kernel


def trial(a, inputs):
    import torch
    import triton

    kernel = make_kernel(a.configs, a.fla)
    n = a.n
    dev = [tuple(torch.tensor(v, dtype=torch.float32, device="cuda") for v in t) for t in inputs]
    # What float32 holds of each input, in float64: the reference is taken from these.
    xws = [[float(p) for p in (x.double() * w.double()).cpu().tolist()] for x, w, _ in dev]
    y0s = [[float(b) for b in y0.double().cpu().tolist()] for _, _, y0 in dev]
    ys = [y0.clone() for _, _, y0 in dev]
    torch.cuda.synchronize()
    barrier = threading.Barrier(a.threads)
    turns = [threading.Event() for _ in range(a.threads)]
    turns[0].set()
    records = [None] * a.threads

    def call(i):
        x, w, _ = dev[i]
        kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, w, ys[i], n)

    def worker(i):
        rec = {"thread": i, "error": None, "result": None}
        records[i] = rec
        if a.fix == "prewarm":  # each thread's call once, serially, on a scratch y
            turns[i].wait()
            scratch = ys[i].clone()
            x, w, _ = dev[i]
            try:
                kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, w, scratch, n)
                torch.cuda.synchronize()
            except Exception as e:
                rec["prewarm_error"] = {"type": type(e).__name__, "where": where(e), "message": str(e)[:200]}
            if i + 1 < a.threads:
                turns[i + 1].set()
        barrier.wait()
        try:
            call(i)
        except Exception as e:
            rec["error"] = {"type": type(e).__name__, "where": where(e), "message": str(e)[:200]}

    ts = [threading.Thread(target=worker, args=(i,), name="ThreadPoolExecutor-0_%d" % i) for i in range(a.threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    for i, rec in enumerate(records):
        ref = dev[i][2].double() + dev[i][0].double() * dev[i][1].double()
        yd = ys[i].double()
        if bool(((yd - ref).abs() <= ATOL + RTOL * ref.abs()).all()):  # the common case, on the GPU
            rec["result"] = {"kind": "ok", "max_abs_err": float((yd - ref).abs().max()), "base": i, "k": 1}
        else:
            rec["result"] = classify([float(v) for v in yd.cpu().tolist()], i, xws, y0s)
    return records, dt


def main(argv=None):
    a = parse_args(argv)
    if a.fla:
        os.environ.setdefault("FLA_CONFIG_DIR", tempfile.mkdtemp(prefix="rerace-fla-empty-"))
        os.environ.setdefault("FLA_CACHE_MODE", "full")
    import torch
    import triton

    mod, origin = load_release(a.release, a.autotuner_src)
    patches = patch_files(a)
    for p in patches:
        load_patch(p)
    torch.ones(1, device="cuda")
    head = {"header": True, "release": a.release, "autotuner": origin, "fix": a.fix,
            "patches": [os.path.relpath(p, REPO) for p in patches], "fla": a.fla,
            "threads": a.threads, "n": a.n, "configs": a.configs, "torch": torch.__version__,
            "triton": triton.__version__, "python": sys.version.split()[0],
            "gil": getattr(sys, "_is_gil_enabled", lambda: True)()}
    if a.fla:
        import fla

        head["fla_version"] = getattr(fla, "__version__", "?")
        head["fla_cache_mode"] = os.environ.get("FLA_CACHE_MODE")
    lines = [json.dumps(head)]
    print(lines[0], flush=True)
    inputs = make_inputs(a.n, a.threads, a.seed)
    for n in range(a.trials):
        records, dt = trial(a, inputs)
        line = {"release": a.release, "fix": a.fix, "fla": a.fla, "trial": n, "seconds": round(dt, 4)}
        line.update(summarize(records))
        line["threads"] = records
        text = json.dumps(line)
        print(text, flush=True)
        lines.append(text)
    if a.json:
        with open(a.json, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
