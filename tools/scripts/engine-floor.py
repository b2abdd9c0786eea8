#!/usr/bin/env python3
"""Where a real-code run's time goes, and the floor under it (issue 26).

    tools/scripts/engine-floor.py RERACE PYTHON [TRACE] [--runs N]

Prints a Markdown table of milliseconds per run of TRACE (default: the brief's H200 recording)
through the Triton that PYTHON imports, unpatched, in GIL mode:

1. the whole engine: `rerace fuzz --runs 101` less `--runs 1`, per run (protocol, baton
   hand-overs, tracer, the real code, and between runs the reset of what a run changed: fuzz's
   runs share one process where they can, rerace_real/reset.py); and the same with
   `--fork-every-run` (a fork per run, as check's runs);
2. the real code with nothing of the engine's scheduling: each recorded thread's calls one
   thread after another in one process (the first thread fills the cache, so the others hit:
   less work than an interleaved run);
3. interleaved in-process: at each point a seeded random choice made in the Python process
   (no pipe, no C++ side), logical threads as OS threads with batons, as the engine runs
   them without greenlet (RERACE_ENGINE_THREADS=os); without and with the engine's GIL tracer;
4. the same with greenlets instead of OS threads, when PYTHON can import greenlet (as the
   engine runs them by default on CPython 3.12+ with greenlet);
5. a fork and wait of the set-up process (the engine forks one child per run), and the same
   with libc's fork and _exit, without Python's after-fork handlers (the kernel's share).

Rows 2-4 ignore locks (a controlled acquire always succeeds): they are the unpatched
program's floor, not a replay. Each figure is the median over N forked children (default 15).
The set-up (Triton, fakes, tuners) is captured from the engine itself: rerace runs PYTHON
through a wrapper that keeps the configuration line it sends.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def outer(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rerace")
    ap.add_argument("python")
    ap.add_argument("trace", nargs="?", default=os.path.join(ROOT, "traces/samples/triton-none-h200.rrt"))
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rerace-floor-")
    try:
        cfg = os.path.join(tmp, "cfg.in")
        wrapper = os.path.join(tmp, "python")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\ntee "%s" | exec "%s" "$@"\n' % (cfg, os.path.abspath(a.python)))
        os.chmod(wrapper, 0o755)
        base = [a.rerace, "replay", a.trace, "--engine", "python", "--python", "gil"]
        subprocess.run(base + ["--python-exe", wrapper, "--seed", "1"], capture_output=True)
        if not os.path.exists(cfg) or os.path.getsize(cfg) == 0:
            sys.exit("engine-floor: the engine sent no configuration (does %s replay %s?)" % (
                a.rerace, a.trace))
        fuzz = [a.rerace, "fuzz", a.trace, "--engine", "python", "--python-exe", a.python,
                "--python", "gil", "--failure", "deadlock", "--jobs", "1"]

        def timed(runs, extra=()):
            t0 = time.perf_counter()
            subprocess.run(fuzz + ["--runs", str(runs)] + list(extra), capture_output=True,
                           check=True)
            return time.perf_counter() - t0
        whole = sorted((timed(101) - timed(1)) / 100 for _ in range(3))[1]
        forked = ["--fork-every-run"]
        whole_forked = sorted((timed(101, forked) - timed(1, forked)) / 100 for _ in range(3))[1]
        # Its set-up with OS threads (batons for row 3); row 4 makes greenlets of its own.
        # The GIL tracer's C hooks where this build made them (build/python/_rerace_gil), as the
        # engine puts them on its path (RERACE_GIL_HOOKS=python: the Python hooks instead).
        hooks = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.rerace))), "python")
        env = dict(os.environ, RERACE_ENGINE_THREADS="os", PYTHONPATH=os.pathsep.join(
            [os.path.join(ROOT, "replay/engine/python")] +
            [hooks] * os.path.exists(os.path.join(hooks, "_rerace_gil.abi3.so")) +
            [p for p in [os.environ.get("PYTHONPATH")] if p]))
        out = subprocess.run([a.python, __file__, "--measure", cfg, str(a.runs)], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("engine-floor: the measurement failed:\n" + out.stderr)
        rows = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| what | ms per run | schedules/s |")
    print("|---|---|---|")
    print("| the whole engine (`fuzz --runs 101` less `--runs 1`, per run) | %.1f | %.0f |" % (
        whole * 1e3, 1 / whole))
    print("| the same, a fork per run (`--fork-every-run`, as check's runs) | %.1f | %.0f |" % (
        whole_forked * 1e3, 1 / whole_forked))
    for name, sec in rows:
        print("| %s | %.1f | %s |" % (name, sec * 1e3, "%.0f" % (1 / sec) if sec > 0 else "-"))


# ---- inside PYTHON, with the engine's package on sys.path ----

def measure(cfg_path, runs):
    import threading
    import _thread
    from rerace_real import control, serve
    cfg = json.loads(open(cfg_path).readline())
    cfg["mode"] = "gil"
    setup = serve.Setup(cfg)
    setup.start()
    threads = setup.program["threads"]
    try:
        import greenlet
    except ImportError:
        greenlet = None

    class Floor(control.Run):
        """A Run whose points choose in-process (seeded random) and hand over directly."""

        def __init__(self, seed, switch, traced):
            super().__init__(-1, -1, setup.free_threaded, setup.rules)
            self.rng = random.Random(seed)
            self.done = set()
            self.switch = switch  # (me, nxt) -> None: runs nxt, returns when me runs again
            self.threads = [control.ThreadState(t, th["name"]) for t, th in enumerate(threads)]
            if traced:
                self.tracer = control.make_tracer(setup.rules, setup.watched)
                self.tracer.install()
            control.RUN = self

        def pick(self, me):
            live = [t for t in self.threads if t.tid not in self.done]
            nxt = self.rng.choice(live)
            if nxt is not me:
                self.switch(me, nxt)

        def access(self, kind, obj, label):
            ts = control._local.ts
            if ts is None or ts.quiet:
                return
            if not self.free_threaded and not ts.opportunity:
                return
            ts.new_step()
            self.pick(ts)

        def sync(self, op, *fields):
            ts = control._local.ts
            self.pick(ts)
            ts.new_step()
            return 1

        def post(self, *fields):
            pass

        def send(self, *fields):
            pass

    def replay_thread(run, ts, ops):
        for op in ops:
            if op[0] == "call":
                if serve._replay_call(setup, run, ts, op[1]) is not None:
                    break
            elif op[0] == "launch":
                run.opportunity()

    def sequential(seed, traced):
        run = Floor(seed, None, False)
        t0 = time.perf_counter()
        for ts, th in zip(run.threads, threads):
            control._local.ts = ts
            replay_thread(run, ts, th["ops"])
        return time.perf_counter() - t0

    def os_threads(seed, traced):
        def switch(me, nxt):
            nxt.baton.release()
            me.baton.acquire()
        run = Floor(seed, switch, traced)
        tracer = run.tracer
        end = _thread.allocate_lock()
        end.acquire()

        def worker(ts, ops):
            control._local.ts = ts
            if tracer is not None:
                tracer.thread_start()
            ts.baton.acquire()
            replay_thread(run, ts, ops)
            if tracer is not None:
                tracer.thread_stop(ts)
            run.done.add(ts.tid)
            live = [t for t in run.threads if t.tid not in run.done]
            (run.rng.choice(live).baton if live else end).release()
        t0 = time.perf_counter()
        for ts, th in zip(run.threads, threads):
            threading.Thread(target=worker, args=(ts, th["ops"]), daemon=True).start()
        run.rng.choice(run.threads).baton.release()
        end.acquire()
        return time.perf_counter() - t0

    def greenlets(seed, traced):
        lets = {}

        def switch(me, nxt):
            control._local.ts = nxt
            lets[nxt.tid].switch()
        run = Floor(seed, switch, traced)
        if run.tracer is not None:
            run.tracer.thread_start()  # one OS thread: its events reach every greenlet

        def worker(ts, ops):
            replay_thread(run, ts, ops)
            run.done.add(ts.tid)
            live = [t for t in run.threads if t.tid not in run.done]
            if live:
                switch(ts, run.rng.choice(live))
        main = greenlet.getcurrent()
        for ts, th in zip(run.threads, threads):
            lets[ts.tid] = greenlet.greenlet(lambda ts=ts, ops=th["ops"]: worker(ts, ops), parent=main)
        t0 = time.perf_counter()
        switch(None, run.rng.choice(run.threads))
        return time.perf_counter() - t0

    def forked(fn, traced):
        times = []
        for seed in range(1, runs + 1):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    os.write(w, repr(fn(seed, traced)).encode())
                finally:
                    os._exit(0)
            os.close(w)
            got = os.read(r, 64)
            os.close(r)
            os.waitpid(pid, 0)
            times.append(float(got))
        return sorted(times)[len(times) // 2]

    from rerace_real import gil_tracer
    hooks = "C hooks" if hasattr(sys, "monitoring") and gil_tracer._hooks_module() else "Python hooks"
    rows = [["the real code, the threads one after another (no scheduling, no tracer)",
             forked(sequential, False)],
            ["interleaved in-process, OS threads and batons, no tracer", forked(os_threads, False)],
            ["interleaved in-process, OS threads and batons, the engine's GIL tracer (%s)" % (
                "sys.monitoring, " + hooks if hasattr(sys, "monitoring") else "sys.settrace"),
             forked(os_threads, True)]]
    if greenlet is not None:
        rows += [["interleaved in-process, greenlets, no tracer", forked(greenlets, False)],
                 ["interleaved in-process, greenlets, the engine's GIL tracer (%s)" % hooks,
                  forked(greenlets, True)]]
    else:
        rows.append(["greenlets: not measured (%s cannot import greenlet)" % sys.executable, 0.0])
    t0 = time.perf_counter()
    for _ in range(runs):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    rows.append(["a fork and wait of the set-up process", (time.perf_counter() - t0) / runs])
    # The same without Python's after-fork handlers (threading's, random's): libc's fork and
    # _exit, so the kernel's share (the page tables copied, then unmapped).
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    t0 = time.perf_counter()
    for _ in range(runs):
        pid = libc.fork()
        if pid == 0:
            libc._exit(0)
        if pid < 0:
            sys.exit("engine-floor: fork: %s" % os.strerror(ctypes.get_errno()))
        os.waitpid(pid, 0)
    rows.append(["the same without Python's after-fork handlers (libc's fork and _exit)",
                 (time.perf_counter() - t0) / runs])
    print(json.dumps(rows))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        measure(sys.argv[2], int(sys.argv[3]))
    else:
        outer(sys.argv[1:])
