"""The brief's experiment: eight threads call one autotuned Triton kernel at once.

An l2norm forward kernel (as in linear-attention layers), 12 configs, key=['N'],
restore_value=['y_ptr'], a cold tuning cache, 8 threads released by a barrier. Variants:

  none        Triton 3.6 as shipped
  lock-run    one global lock around Autotuner.run (a rerace_probe.Lock, so it is recorded)
  tls-nargs   Autotuner.nargs made thread-local (the fix proposed in triton issue 11494)

Prints one line per trial: how many threads raised what. Exit 0 whatever happened.
Usage: python3 autotune_race.py --variant none --trials 1 [--threads 8]
"""

import argparse
import collections
import contextlib
import os
import sys
import threading
import time

import torch
import triton
import triton.language as tl
from triton.runtime import autotuner

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

CONFIGS = [triton.Config({"BLOCK_N": bn}, num_warps=w) for bn in (1024, 2048, 4096) for w in (1, 2, 4, 8)]


def make_kernel():
    @triton.autotune(configs=CONFIGS, key=["N"], restore_value=["y_ptr"])
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


def apply_variant(name):
    if name == "lock-run":
        try:
            import rerace_probe

            lock = rerace_probe.Lock("autotune lock")
        except ImportError:
            lock = threading.Lock()
        run = autotuner.Autotuner.run

        def locked_run(self, *args, **kwargs):
            with lock:
                return run(self, *args, **kwargs)

        autotuner.Autotuner.run = locked_run
    elif name == "tls-nargs":
        local = threading.local()
        autotuner.Autotuner.nargs = property(lambda self: getattr(local, "nargs", None),
                                             lambda self, v: setattr(local, "nargs", v))


def trial(threads, M=4096, N=1024):
    kernel = make_kernel()
    barrier = threading.Barrier(threads)
    outcome = {}

    def worker(i):
        x = torch.randn(M, N, device="cuda")
        y = torch.empty_like(x)
        torch.cuda.synchronize()
        barrier.wait()
        try:
            kernel[(M,)](x, y, N, 1e-6)
            torch.cuda.synchronize()
            outcome[i] = "ok"
        except Exception as e:
            outcome[i] = "%s: %s" % (type(e).__name__, e)

    ts = [threading.Thread(target=worker, args=(i,), name="ThreadPoolExecutor-0_%d" % i) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return outcome


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="none", choices=["none", "lock-run", "tls-nargs"])
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--profile", action="store_true", help="run the trials under torch.profiler")
    a = ap.parse_args()
    apply_variant(a.variant)
    torch.ones(1, device="cuda")
    failed = 0
    for n in range(a.trials):
        ctx = contextlib.nullcontext()
        if a.profile:
            from torch.profiler import ProfilerActivity, profile

            ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        t0 = time.perf_counter()
        with ctx:
            out = trial(a.threads)
        dt = time.perf_counter() - t0
        counts = collections.Counter(out.values())
        bad = sum(c for k, c in counts.items() if k != "ok")
        failed += bad > 0
        print("trial %d (%.3f s): %s" % (n, dt, "; ".join("%d x %s" % (c, k) for k, c in sorted(counts.items()))), flush=True)
    print("variant %s: %d of %d trials failed" % (a.variant, failed, a.trials), flush=True)


if __name__ == "__main__":
    main()
