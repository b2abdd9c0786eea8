#!/usr/bin/env python3
"""The probe's synchronization marks (recorder/python/rerace_probe/sync.py) on this CPU: the time
of each primitive's operations without the probe and with it (marks into a Python list: the
probe's own cost, without NVTX, whose mark the recorder prices separately: docs/PERFORMANCE.md).
Prints a table. Usage: python3 tools/scripts/probe-sync-overhead.py [N]"""

import os
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

CASES = {
    "Event.set + wait (set)": "ev = threading.Event()\nfor _ in range(N):\n    ev.set(); ev.wait()",
    "Queue.put + get": "q = queue.Queue()\nfor _ in range(N):\n    q.put(1); q.get()",
    "Thread.start + join": "for _ in range(N // 100):\n    t = threading.Thread(target=int); t.start(); t.join()",
    "Future.set_result + result": "from concurrent.futures import Future\nfor _ in range(N):\n"
                                  "    f = Future(); f.set_result(1); f.result()",
}

CHILD = r"""
import queue, sys, threading, time
N = int(sys.argv[2])
if sys.argv[1] == "probe":
    sys.path.insert(0, %r)
    import rerace_probe
    marks = []
    rerace_probe.set_emitter(marks.append)
    rerace_probe.install_sync()
t0 = time.perf_counter()
exec(sys.argv[3])
print(time.perf_counter() - t0)
""" % os.path.join(ROOT, "recorder", "python")


def run(mode, n, body):
    best = None
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", CHILD, mode, str(n), body], capture_output=True,
                             text=True, check=True)
        t = float(out.stdout.strip())
        best = t if best is None else min(best, t)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    print("Python %s, N=%d, best of 3 processes each" % (sys.version.split()[0], n))
    print("| operation | without the probe (us/op) | with its marks (us/op) | added (us/op) |")
    print("|---|---|---|---|")
    for name, body in CASES.items():
        ops = n // 100 if "Thread" in name else n
        a, b = run("plain", n, body), run("probe", n, body)
        print("| %s | %.2f | %.2f | %.2f |" % (name, a / ops * 1e6, b / ops * 1e6, (b - a) / ops * 1e6))


if __name__ == "__main__":
    main()
