"""A step whose two tuner calls (one cold tuner: the real Triton Autotuner, a fake kernel and
tensors, test_probe.py) are ordered only by one synchronization of the program, under the probe
with its synchronization marks. Prints each mark as a JSON line [thread name, text], in the
order they were emitted, then {"errors": [...]}.

tests/replay/engine/sync_path_test.cc turns the marks into a trace through the recorder (with
and without the rerace:sync marks) and replays it. Usage: python sync_step.py KIND, KIND one of
event, start, join, queue, future, submit, barrier, or prewarm (eight threads'
calls in turn, ordered by Events, a barrier, then eight concurrent calls)."""

import json
import sys
import threading

import rerace_probe
import test_probe as tp
from triton.runtime import autotuner

kind = sys.argv[1]
marks = []
lock = threading.Lock()


def emit(text):
    with lock:
        marks.append((threading.current_thread().name, text))


rerace_probe.set_emitter(emit)
rerace_probe.set_fields(True)
rerace_probe.patch_autotuner(autotuner)
rerace_probe.install_sync()
tuner = tp.make_tuner(3)
errors = []


def call(i):
    try:
        tuner.run(tp.FakeTensor(i), tp.FakeTensor(i), 4096)
    except Exception as e:  # noqa: BLE001 - recorded by the probe, reported here
        errors.append("%s: %s" % (type(e).__name__, e))


def spawn(fn, name):
    t = threading.Thread(target=fn, name=name)
    t.start()
    return t


if kind == "event":
    ev = threading.Event()
    a = spawn(lambda: (call(0), ev.set()), "first")
    b = spawn(lambda: (ev.wait(), call(1)), "second")
    a.join()
    b.join()
elif kind == "start":  # the main thread's call, then a thread it starts
    call(0)
    spawn(lambda: call(1), "second").join()
elif kind == "join":  # a thread's call, joined; then another thread is started
    spawn(lambda: call(0), "first").join()
    spawn(lambda: call(1), "second").join()
elif kind == "queue":
    import queue
    q = queue.Queue()
    a = spawn(lambda: (call(0), q.put(1)), "first")
    b = spawn(lambda: (q.get(), call(1)), "second")
    a.join()
    b.join()
elif kind == "future":  # a pool thread's call; the main thread calls once it has the result
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as ex:
        ex.submit(call, 0).result()
        call(1)
elif kind == "submit":  # the main thread's call, then work submitted to a pool thread already up
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as ex:
        up = threading.Event()
        ex.submit(up.set)
        up.wait()
        call(0)
        ex.submit(call, 1)
elif kind == "barrier":
    bar = threading.Barrier(2)
    a = spawn(lambda: (call(0), bar.wait()), "first")
    b = spawn(lambda: (bar.wait(), call(1)), "second")
    a.join()
    b.join()
elif kind == "prewarm":  # the brief's prewarm: 8 serial calls in turn (Events), a barrier, 8 more
    turns = [threading.Event() for _ in range(8)]
    turns[0].set()
    bar = threading.Barrier(8)

    def worker(i):
        turns[i].wait()
        call(i)
        if i + 1 < 8:
            turns[i + 1].set()
        bar.wait()
        call(i)

    workers = [spawn(lambda i=i: worker(i), "ThreadPoolExecutor-0_%d" % i) for i in range(8)]
    for t in workers:
        t.join()
else:
    raise SystemExit("unknown kind %r" % kind)
for name, text in marks:
    print(json.dumps([name, text]))
print(json.dumps({"errors": errors}))
