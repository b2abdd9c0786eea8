"""Two threads, two CUDA streams each: the recording rerace's virtual GPU is checked against
for streams that overlap (issue 18).

Each thread owns two streams and, per iteration, launches a matmul on each (independent work,
so the GPU may run them at once), then synchronizes both. A barrier releases the threads
together; the step is the wall time from the barrier to the last thread's end.
Prints one line per trial: "trial N: X ms". Usage: python3 two_streams.py --trials 8
"""
import argparse
import threading
import time

import torch


def worker(barrier, a, b, iters, out, i):
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    barrier.wait()
    for _ in range(iters):
        with torch.cuda.stream(s1):
            c1 = a @ b
        with torch.cuda.stream(s2):
            c2 = b @ a
        s1.synchronize()
        s2.synchronize()
    out[i] = float(c1[0, 0] + c2[0, 0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--n", type=int, default=2048)
    a = ap.parse_args()
    x = torch.randn(a.n, a.n, device="cuda")
    y = torch.randn(a.n, a.n, device="cuda")
    (x @ y).sum().item()  # cuBLAS initialized before the step
    for t in range(a.trials):
        barrier = threading.Barrier(a.threads + 1)
        out = [0.0] * a.threads
        ts = [threading.Thread(target=worker, args=(barrier, x, y, a.iters, out, i)) for i in range(a.threads)]
        for th in ts:
            th.start()
        barrier.wait()
        t0 = time.perf_counter()
        for th in ts:
            th.join()
        print("trial %d: %.3f ms" % (t, (time.perf_counter() - t0) * 1e3), flush=True)


if __name__ == "__main__":
    main()
