"""The brief's experiment: eight threads call one autotuned Triton kernel at once.

An l2norm forward kernel (as in linear-attention layers), 12 configs, key=['N'],
restore_value=['y_ptr'], a cold tuning cache (a new tuner each trial), 8 threads released by a
barrier. What runs is chosen by:

  --patch FILE       a patch file (repeatable), imported before the kernel is built, as a
                     training script applies a patch at start-up (rerace's named fixes are in
                     replay/engine/python/rerace_real/fixes/)
  --variant NAME     a named fix: none, lock-run, tls-nargs, tls-state, lock-key-event (the
                     patch file of that name), or prewarm (= --prewarm)
  --prewarm          each thread's call made once, serially (thread 0 first), before the barrier
  --storm N          after a serial prewarm, each thread makes N cached calls concurrently
  --copies           each worker calls its own copy.copy of the tuner (sharing its cache dict and
                     its hooks, closures over the original)
  --warmup           the main thread calls the kernel once (the workers' key) before it starts them
  --switch-interval  sys.setswitchinterval(S) before the threads start (e.g. 1e-6)
  --hooks KIND       the tuner's hooks: restore (restore_value=['y_ptr'], the default), reset
                     (reset_to_zero=['y_ptr']), both (reset_to_zero=['y_ptr'] and
                     restore_value=['x_ptr']), user (the user's own pre_hook and post_hook, no
                     restore_value / reset_to_zero), none (no hooks)
  --keys N           the workers' calls fall on N tuning keys (worker i's row length is
                     --cols >> (i % N), and key=['N'])
  --configs N        the first N of the 12 configs (fewer configs, smaller recordings)

Each worker reports the exception its call raised (type, message, file:line function of the
innermost frame) and whether its output y holds what it must (x / sqrt(sum(x^2) + eps) per row),
right after its own call and again once all threads have joined (another thread's post-hook
can restore a stale copy into a y whose call has returned). y starts filled with 100 + the
worker's index, so a row holding a worker's initial values says whose copy was restored.

Prints a header, one line per worker and one summary line per trial; --json FILE appends one
JSON object per trial. Exit 0 whatever happened.
Usage: python3 autotune_race.py --variant none --trials 1 [--threads 8]
"""

import argparse
import collections
import contextlib
import copy
import importlib.util
import json
import os
import platform
import sys
import threading
import time
import traceback

import torch
import triton
import triton.language as tl
from triton.runtime import autotuner

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "recorder", "python"))
FIXES_DIR = os.path.join(REPO, "replay", "engine", "python", "rerace_real", "fixes")

CONFIGS = [triton.Config({"BLOCK_N": bn}, num_warps=w) for bn in (1024, 2048, 4096) for w in (1, 2, 4, 8)]
EPS = 1e-6


def _user_pre_hook(nargs, reset_only=False):
    # A user's own pre-hook (Triton calls it with reset_only=True after benchmarking too).
    nargs["y_ptr"].zero_()


def _user_post_hook(nargs, exception):
    pass


HOOKS = {
    "restore": dict(restore_value=["y_ptr"]),
    "reset": dict(reset_to_zero=["y_ptr"]),
    "both": dict(reset_to_zero=["y_ptr"], restore_value=["x_ptr"]),
    "user": dict(pre_hook=_user_pre_hook, post_hook=_user_post_hook),
    "none": dict(),
}


def make_kernel(hooks="restore", configs=len(CONFIGS)):
    @triton.autotune(configs=CONFIGS[:configs], key=["N"], **HOOKS[hooks])
    @triton.jit
    def l2norm_fwd_kernel(x_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        var = tl.sum(x * x, axis=0)
        y = x / tl.sqrt(var + eps)
        tl.store(y_ptr + row * N + cols, y, mask=mask)

    return l2norm_fwd_kernel


# ---- patches -------------------------------------------------------------------------------

def _fix_files():
    spec = importlib.util.spec_from_file_location("_rerace_fixes_index", os.path.join(FIXES_DIR, "__init__.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {name: os.path.join(FIXES_DIR, f) for name, f in mod.FIXES.items()}


def _module_name(path):
    """The dotted name under which `path` is importable from sys.path, else its file stem."""
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    best = None
    for entry in sys.path:
        root = os.path.abspath(entry or ".")
        if path.startswith(root + os.sep) and (best is None or len(root) > len(best)):
            best = root
    if best is not None:
        parts = os.path.relpath(os.path.splitext(path)[0], best).split(os.sep)
        if all(p.isidentifier() for p in parts):
            return ".".join(parts)
    return stem


def load_patch(path):
    """Imports a patch file as a module (once per process: a second load returns the first)."""
    name = _module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise SystemExit("--patch %s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _defined_at(fn):
    try:
        import rerace_probe

        d = rerace_probe._where_defined(fn)
    except Exception:
        d = {"module": getattr(fn, "__module__", "?"), "qualname": getattr(fn, "__qualname__", "?")}
    return "%s.%s" % (d.get("module"), d.get("qualname"))


# ---- outcomes ------------------------------------------------------------------------------

def _where(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    frame = tb[-1]
    path = frame.filename
    cut = path.rfind("triton/")
    if cut >= 0:
        path = path[cut:]
    else:
        path = os.path.basename(path)
    return "%s:%d %s" % (path, frame.lineno, frame.name)


def _error(exc):
    return {"type": type(exc).__name__, "message": str(exc), "where": _where(exc)}


def _label(err):
    return "%s: %s at %s" % (err["type"], err["message"], err["where"])


def expected_y(x):
    xf = x.float()
    return xf / torch.sqrt((xf * xf).sum(dim=1, keepdim=True) + EPS)


def check_y(y, want, sentinels):
    """'ok', or what the wrong rows hold: a worker's initial values (a stale restore) or other."""
    good = torch.isclose(y, want, rtol=1e-4, atol=1e-6).all(dim=1)
    bad = int((~good).sum().item())
    if bad == 0:
        return "ok"
    rows = y[~good]
    held = []
    for j, s in enumerate(sentinels):
        n = int((rows == s).all(dim=1).sum().item())
        if n:
            held.append("%d rows hold worker %d's initial y" % (n, j))
    other = bad - sum(int(h.split()[0]) for h in held)
    if other:
        held.append("%d rows hold other values" % other)
    return "wrong: %d of %d rows (%s)" % (bad, y.shape[0], "; ".join(held))


# ---- one trial ----------------------------------------------------------------------------

def trial(threads, prewarm=False, storm=0, M=4096, N=1024, hooks="restore", configs=len(CONFIGS), keys=1,
          copies=False, warmup=False):
    kernel = make_kernel(hooks, configs)
    # --copies: each worker calls its own shallow copy of the tuner (a "per-thread tuner"
    # attempt): the copies share the original's cache dict and its hooks, closures over it.
    kernels = [copy.copy(kernel) if copies else kernel for _ in range(threads)]
    if warmup:  # the main thread's call, before it starts the workers (the same key)
        x = torch.randn(M, N, device="cuda")
        kernel[(M,)](x, torch.empty_like(x), x.shape[1], EPS)
        torch.cuda.synchronize()
    barrier = threading.Barrier(threads)
    turns = [threading.Event() for _ in range(threads)]
    turns[0].set()
    sentinels = [100.0 + i for i in range(threads)]
    out = [None] * threads
    tensors = [None] * threads

    def call(x, y):
        kernels[int(threading.current_thread().name.rsplit("_", 1)[1])][(M,)](x, y, x.shape[1], EPS)

    def worker(i):
        rec = {"worker": i, "thread": threading.current_thread().name, "error": None}
        out[i] = rec
        x = torch.randn(M, max(N >> (i % keys), 1), device="cuda")
        y = torch.full_like(x, sentinels[i])
        want = expected_y(x)
        tensors[i] = (y, want)
        torch.cuda.synchronize()
        if prewarm or storm:
            turns[i].wait()
            try:
                call(x, y)
                torch.cuda.synchronize()
            except Exception as e:
                rec["prewarm_error"] = _error(e)
            if i + 1 < threads:
                turns[i + 1].set()
            y.fill_(sentinels[i])
            torch.cuda.synchronize()
        barrier.wait()
        if storm:
            errors = collections.Counter()
            for _ in range(storm):
                try:
                    call(x, y)
                except Exception as e:
                    errors[_label(_error(e))] += 1
            rec["calls"] = storm
            rec["storm_errors"] = dict(errors)
            if errors:
                first = next(iter(errors))
                rec["error"] = {"type": first.split(":")[0], "message": first, "where": ""}
        else:
            try:
                call(x, y)
            except Exception as e:
                rec["error"] = _error(e)
        try:
            torch.cuda.synchronize()
            rec["y_after_call"] = check_y(y, want, sentinels)
        except Exception as e:
            rec["y_after_call"] = "not checked: %s" % _label(_error(e))

    ts = [threading.Thread(target=worker, args=(i,), name="ThreadPoolExecutor-0_%d" % i) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    torch.cuda.synchronize()
    for i, rec in enumerate(out):
        if tensors[i] is not None:
            rec["y_after_join"] = check_y(tensors[i][0], tensors[i][1], sentinels)
    return out


def summary(out):
    counts = collections.Counter()
    for rec in out:
        if rec.get("storm_errors"):
            for k, c in rec["storm_errors"].items():
                counts["%s (in %d calls)" % (k, rec["calls"])] += 1
        else:
            counts[_label(rec["error"]) if rec["error"] else "ok"] += 1
    wrong = [r["worker"] for r in out if r.get("y_after_call", "ok") != "ok" or r.get("y_after_join", "ok") != "ok"]
    text = "; ".join("%d x %s" % (c, k) for k, c in sorted(counts.items()))
    if wrong:
        text += "; y wrong in workers %s" % ",".join(map(str, wrong))
    else:
        text += "; y ok in all"
    failed = any(r["error"] or r.get("prewarm_error") for r in out) or bool(wrong)
    return text, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="none",
                    choices=["none", "lock-run", "tls-nargs", "tls-state", "lock-key-event", "prewarm"])
    ap.add_argument("--patch", action="append", default=[], metavar="FILE",
                    help="a patch file imported before the kernel is built (repeatable)")
    ap.add_argument("--prewarm", action="store_true", help="each thread's call once, serially, before the barrier")
    ap.add_argument("--storm", type=int, default=0, metavar="N",
                    help="after a serial prewarm, N cached calls per thread, concurrently")
    ap.add_argument("--switch-interval", type=float, default=None, metavar="S")
    ap.add_argument("--copies", action="store_true",
                    help="each worker calls its own copy.copy of the tuner (sharing its cache and hooks)")
    ap.add_argument("--warmup", action="store_true",
                    help="the main thread calls the kernel once before it starts the workers")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rows", type=int, default=4096, help="M: rows of x (one program each)")
    ap.add_argument("--cols", type=int, default=1024, help="N: the row length, the tuning key")
    ap.add_argument("--hooks", default="restore", choices=sorted(HOOKS),
                    help="the tuner's hooks (restore_value, reset_to_zero, both, the user's own, none)")
    ap.add_argument("--keys", type=int, default=1, help="tuning keys the workers' calls fall on")
    ap.add_argument("--configs", type=int, default=len(CONFIGS), help="the first N of the 12 configs")
    ap.add_argument("--json", metavar="FILE", help="append one JSON object per trial")
    ap.add_argument("--quiet", action="store_true", help="no per-worker lines")
    ap.add_argument("--profile", action="store_true", help="run the trials under torch.profiler")
    a = ap.parse_args()

    if not 1 <= a.configs <= len(CONFIGS):
        ap.error("--configs: 1 to %d" % len(CONFIGS))
    if a.keys < 1 or a.cols >> (a.keys - 1) < 1:
        ap.error("--keys: at least 1, and --cols >> (keys - 1) at least 1")
    patches = list(a.patch)
    if a.variant == "prewarm" or a.storm:
        a.prewarm = True
    if a.variant not in ("none", "prewarm"):
        patches.insert(0, _fix_files()[a.variant])
    for p in patches:
        load_patch(p)
    if a.switch_interval is not None:
        sys.setswitchinterval(a.switch_interval)

    torch.ones(1, device="cuda")
    A = autotuner.Autotuner
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    fields = []
    for name in ("nargs", "restore_copies"):
        v = A.__dict__.get(name)
        if isinstance(v, property):
            fields.append("%s=property(%s)" % (name, _defined_at(v.fget)))
    print("# python %s (gil %s) torch %s triton %s; switch interval %g; threads %d; prewarm %s; storm %d; "
          "hooks %s; keys %d; configs %d; patches: %s; Autotuner.run -> %s%s"
          % (platform.python_version(), gil, torch.__version__, triton.__version__, sys.getswitchinterval(),
             a.threads, a.prewarm or bool(a.storm), a.storm, a.hooks, a.keys, a.configs,
             " ".join(os.path.relpath(os.path.abspath(p), REPO) for p in patches) or "none",
             _defined_at(A.run), "; " + " ".join(fields) if fields else ""), flush=True)

    failed = 0
    for n in range(a.trials):
        ctx = contextlib.nullcontext()
        if a.profile:
            from torch.profiler import ProfilerActivity, profile

            ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        t0 = time.perf_counter()
        with ctx:
            out = trial(a.threads, prewarm=a.prewarm, storm=a.storm, M=a.rows, N=a.cols, hooks=a.hooks,
                        configs=a.configs, keys=a.keys, copies=a.copies, warmup=a.warmup)
        dt = time.perf_counter() - t0
        text, bad = summary(out)
        failed += bad
        if not a.quiet:
            for r in out:
                err = _label(r["error"]) if r["error"] and not r.get("storm_errors") else "ok"
                if r.get("storm_errors"):
                    err = "%d of %d calls raised: %s" % (sum(r["storm_errors"].values()), r["calls"],
                                                         "; ".join(r["storm_errors"]))
                elif "calls" in r:
                    err = "%d calls ok" % r["calls"]
                pre = " (prewarm call: %s)" % _label(r["prewarm_error"]) if r.get("prewarm_error") else ""
                print("  worker %d: %s%s; y after call %s, after join %s"
                      % (r["worker"], err, pre, r.get("y_after_call"), r.get("y_after_join")), flush=True)
        print("trial %d (%.3f s): %s" % (n, dt, text), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"variant": a.variant, "hooks": a.hooks, "keys": a.keys, "configs": a.configs,
                                    "patches": patches, "prewarm": a.prewarm,
                                    "storm": a.storm, "switch_interval": sys.getswitchinterval(),
                                    "threads": a.threads, "trial": n, "seconds": dt, "failed": bad,
                                    "workers": out}) + "\n")
    print("variant %s: %d of %d trials failed" % (a.variant, failed, a.trials), flush=True)


if __name__ == "__main__":
    main()
