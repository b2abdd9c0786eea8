"""A small PyTorch step for the recorder on the H200: two threads launch kernels, marks arrive.

Usage: python3 torch_step.py [--profile] [--iters N]
Prints the step's wall time. With --profile it runs under torch.profiler (for the overhead
comparison). Emits one rerace tuner mark and one free mark per thread via torch.cuda.nvtx.mark.
"""
import sys
import threading
import time

import torch


def work(tid, iters, marks):
    torch.cuda.set_device(0)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.randn(512, 512, device="cuda")
        b = torch.randn(512, 512, device="cuda")
        if marks:
            torch.cuda.nvtx.mark(f"rerace:tuner kind=call-begin tuner=0x1 class=torch.test kernel=mm key={tid} configs=a|b")
            torch.cuda.nvtx.mark("python free mark")
        for _ in range(iters):
            a = torch.relu(a @ b) * 0.5
    s.synchronize()


def main():
    iters = 200
    if "--iters" in sys.argv:
        iters = int(sys.argv[sys.argv.index("--iters") + 1])
    torch.cuda.init()
    torch.ones(1, device="cuda")
    work(99, 10, False)  # warm-up: kernels loaded, allocator primed
    torch.cuda.synchronize()
    def step():
        ts = [threading.Thread(target=work, args=(i, iters, True), name=f"worker-{i}") for i in range(2)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        torch.cuda.synchronize()
        return time.perf_counter() - t0
    if "--profile" in sys.argv:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            dt = step()
    else:
        dt = step()
    print(f"torch_step: {dt:.6f} s")


if __name__ == "__main__":
    main()
