"""A training step whose threads each call their own shallow copy (copy.copy) of one autotuned
kernel: the real Triton Autotuner (from PyPI), a fake kernel and fake tensors (test_probe.py),
under the probe with field marks on. Prints each mark as a JSON line [thread name, text] in
the order they were emitted, then a last line {"errors": [...]} (what the threads raised).

tests/replay/engine/probe_path_test.cc turns the marks into a trace through the recorder and
replays it with both engines. Usage: python copies_step.py [THREADS [one]]"""

import copy
import json
import sys
import threading

import rerace_probe
import test_probe as tp
from triton.runtime import autotuner

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 8
one = len(sys.argv) > 2 and sys.argv[2] == "one"  # every thread calls the one tuner instead
marks = []
lock = threading.Lock()


def emit(text):
    with lock:
        marks.append((threading.current_thread().name, text))


rerace_probe.set_emitter(emit)
rerace_probe.set_fields(True)
rerace_probe.patch_autotuner(autotuner)
original = tp.make_tuner(4)
copies = [original if one else copy.copy(original) for _ in range(threads)]
barrier = threading.Barrier(threads)
errors = []


def worker(i):
    x, y = tp.FakeTensor(i), tp.FakeTensor(i)
    barrier.wait()
    try:
        copies[i].run(x, y, 4096)
    except Exception as e:  # noqa: BLE001 - recorded by the probe, reported here
        with lock:
            errors.append("%s: %s" % (type(e).__name__, e))


workers = [threading.Thread(target=worker, args=(i,), name="worker-%d" % i) for i in range(threads)]
for t in workers:
    t.start()
for t in workers:
    t.join()
for name, text in marks:
    print(json.dumps([name, text]))
print(json.dumps({"errors": errors}))
