"""Tests of the Triton probe against the real triton.runtime.autotuner (Triton 3.6 from PyPI),
with a fake kernel and fake tensors: no GPU needed. Skipped when Triton is not installed."""

import os
import re
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import rerace_probe  # noqa: E402

try:
    import triton
    from triton.runtime import autotuner as triton_autotuner
except Exception as e:  # pragma: no cover - depends on the machine
    triton = None
    SKIP = "triton is not installed: %s" % e


class FakeTensor:
    """Enough of a tensor for the default hooks: clone, copy_, zero_, dtype."""

    dtype = "torch.float32"

    def __init__(self, owner):
        self.owner = owner
        self.value = owner

    def clone(self):
        t = FakeTensor(self.owner)
        t.value = self.value
        return t

    def copy_(self, other):
        self.value = other.value

    def zero_(self):
        self.value = 0


def kernel_py(x_ptr, y_ptr, N):
    pass


class FakeKernel:
    """Stands for a JITFunction: `.fn` is the Python function, `run` launches."""

    fn = staticmethod(kernel_py)

    def __init__(self):
        self.launches = 0

    def run(self, *args, **kwargs):
        self.launches += 1
        time.sleep(0.0002)  # a launch releases the GIL, as a real one does


def fake_bench(kernel_call, quantiles):
    for _ in range(3):
        kernel_call()
        time.sleep(0.0001)
    return [0.02, 0.019, 0.021]


def make_tuner(n_configs=4):
    configs = [triton.Config({"BLOCK_N": 64 << i}, num_warps=4) for i in range(n_configs)]
    return triton_autotuner.Autotuner(FakeKernel(), ["x_ptr", "y_ptr", "N"], configs, key=["N"],
                                      reset_to_zero=None, restore_value=["y_ptr"],
                                      do_bench=fake_bench)


@unittest.skipIf(triton is None, "triton not installed")
class ProbeTest(unittest.TestCase):
    def setUp(self):
        self.marks = []
        self.lock = threading.Lock()
        rerace_probe._tls.named = False

        def emit(text):
            with self.lock:
                self.marks.append((threading.current_thread().name, text))

        rerace_probe.set_emitter(emit)
        rerace_probe.patch_autotuner(triton_autotuner)

    def tearDown(self):
        rerace_probe.set_emitter(None)

    def kinds(self, thread):
        return [re.search(r"kind=(\S+)", t).group(1) for (th, t) in self.marks
                if th == thread and t.startswith("rerace:tuner")]

    def test_one_call_marks_every_transition_in_order(self):
        tuner = make_tuner(3)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        kinds = self.kinds(threading.current_thread().name)
        per_config = ["bench-begin"] + ["pre-hook", "post-hook"] * 3 + ["bench-end"]
        self.assertEqual(kinds, ["call-begin"] + per_config * 3 + ["launch", "call-end"])
        begin = [t for (_, t) in self.marks if "kind=call-begin" in t][0]
        self.assertIn("key=(4096,%20'torch.float32',%20'torch.float32')", begin)
        self.assertIn("args=x_ptr|y_ptr|N", begin)
        self.assertIn("restore=1", begin)
        self.assertIn("class=triton.runtime.autotuner.Autotuner", begin)
        self.assertIn("kernel=kernel_py", begin)
        end = [t for (_, t) in self.marks if "kind=bench-end" in t][0]
        self.assertIn("timings=0.02,0.019,0.021", end)
        self.assertIn("reps=3", end)
        # A thread announces its Python name once.
        names = [t for (_, t) in self.marks if t.startswith("rerace:thread")]
        self.assertEqual(len(names), 1)

    def test_cached_key_skips_benchmarking(self):
        tuner = make_tuner(2)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        self.marks.clear()
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        self.assertEqual(self.kinds(threading.current_thread().name), ["call-begin", "launch", "call-end"])

    def test_the_race_still_happens_and_is_recorded(self):
        """Eight threads, one cold tuner: the real Triton code raises KeyError('y_ptr') under the
        probe, and each raising thread's error mark names autotuner.py:74."""
        tuner = make_tuner(12)
        barrier = threading.Barrier(8)
        errors = {}

        def worker(i):
            x, y = FakeTensor(i), FakeTensor(i)
            barrier.wait()
            try:
                tuner.run(x, y, 4096)
            except Exception as e:
                errors[threading.current_thread().name] = e

        threads = [threading.Thread(target=worker, args=(i,), name="worker-%d" % i) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        keyerrors = [n for n, e in errors.items() if isinstance(e, KeyError) and e.args == ("y_ptr",)]
        self.assertGreaterEqual(len(keyerrors), 1, errors)
        for name in keyerrors:
            err = [t for (th, t) in self.marks if th == name and "kind=error" in t]
            self.assertEqual(len(err), 1)
            self.assertIn("etype=KeyError", err[0])
            self.assertIn("emsg='y_ptr'", err[0])
            self.assertIn("ewhere=triton/runtime/autotuner.py:74%20_post_hook", err[0])

    def test_lock_marks_acquire_and_release(self):
        lock = rerace_probe.Lock("autotune")
        with lock:
            pass
        texts = [t for (_, t) in self.marks if t.startswith("rerace:lock")]
        self.assertEqual(len(texts), 2)
        self.assertTrue(texts[0].startswith("rerace:lock kind=acquire lock=0x"))
        self.assertTrue(texts[1].startswith("rerace:lock kind=release lock=0x"))
        self.assertIn("name=autotune", texts[0])

    def test_escaping_matches_the_recorder_grammar(self):
        text = rerace_probe.encode("read", 255, "c", "k", key="a b|c=d%", config=2)
        self.assertEqual(text, "rerace:tuner kind=read tuner=0xff class=c kernel=k key=a%20b%7Cc%3Dd%25 config=2")


class DisabledTest(unittest.TestCase):
    def test_without_a_recorder_nothing_is_emitted(self):
        rerace_probe.set_emitter(None)
        before = len(sys.meta_path)
        rerace_probe.install()
        self.assertEqual(len(sys.meta_path), before)


if __name__ == "__main__":
    unittest.main()
