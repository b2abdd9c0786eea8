"""Tests of the Triton probe against the real triton.runtime.autotuner (Triton 3.6 from PyPI),
with a fake kernel and fake tensors: no GPU needed. Skipped when Triton is not installed.

Also the named fixes (replay/engine/python/rerace_real/fixes/) under the probe: each patch runs in its
own interpreter (a patch changes Autotuner for the whole process)."""

import copy
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse
import importlib.util as importlib_util

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROBE_DIR = os.path.join(REPO, "recorder", "python")
sys.path.insert(0, PROBE_DIR)
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

    def test_hooks_a_subclass_installs_after_init_are_marked_once(self):
        """FLA's CachedAutotuner sets its own hooks after Triton's __init__, replacing the probe's
        wrappers: the probe wraps them again at the first call, so each benchmark's pre-hook and
        post-hook are still marked, once each, and the subclass's own hooks still run."""
        ran = []

        class OwnHooks(triton_autotuner.Autotuner):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)

                def _pre_hook(kwargs, reset_only=False):
                    ran.append("pre")

                def _post_hook(kwargs, exception):
                    ran.append("post")

                self.pre_hook = _pre_hook
                self.post_hook = _post_hook

        configs = [triton.Config({"BLOCK_N": 64 << i}, num_warps=4) for i in range(2)]
        tuner = OwnHooks(FakeKernel(), ["x_ptr", "y_ptr", "N"], configs, key=["N"],
                         reset_to_zero=None, restore_value=["y_ptr"], do_bench=fake_bench)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        tuner.run(FakeTensor(0), FakeTensor(0), 8192)  # a second call wraps nothing again
        kinds = self.kinds(threading.current_thread().name)
        per_config = ["bench-begin"] + ["pre-hook", "post-hook"] * 3 + ["bench-end"]
        self.assertEqual(kinds, (["call-begin"] + per_config * 2 + ["launch", "call-end"]) * 2)
        # 3 repetitions x 2 configs x 2 calls, and one reset_only pre-hook per tuning call.
        self.assertEqual(ran.count("post"), 12)
        self.assertEqual(ran.count("pre"), 14)

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


def _detail(text):
    m = re.search(r" detail=(\S+)", text)
    return json.loads(urllib.parse.unquote(m.group(1))) if m else None


class PatchedTuner(triton_autotuner.Autotuner if triton else object):
    """A tuner class as a user's patch leaves it: its own run and a property for nargs."""

    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)

    @property
    def nargs(self):
        return getattr(_PATCH_TLS, "nargs", None)

    @nargs.setter
    def nargs(self, value):
        _PATCH_TLS.nargs = value


_PATCH_TLS = threading.local()


@unittest.skipIf(triton is None, "triton not installed")
class MetadataTest(unittest.TestCase):
    """The first call-begin of each tuner carries what ran, as JSON in detail=."""

    def setUp(self):
        self.marks = []
        self.lock = threading.Lock()

        def emit(text):
            with self.lock:
                self.marks.append(text)

        rerace_probe.set_emitter(emit)
        rerace_probe.patch_autotuner(triton_autotuner)

    def tearDown(self):
        rerace_probe.set_emitter(None)

    def begins(self):
        return [t for t in self.marks if "kind=call-begin" in t]

    def test_first_call_carries_metadata_once(self):
        tuner = make_tuner(2)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        first, second = self.begins()
        self.assertIsNone(_detail(second))
        meta = _detail(first)
        self.assertEqual(meta["v"], rerace_probe.METADATA_VERSION)
        self.assertEqual(meta["kernel"], {"module": kernel_py.__module__, "qualname": "kernel_py"})
        self.assertEqual(meta["keys"], ["N"])
        self.assertEqual(meta["python"]["version"], platform.python_version())
        self.assertEqual(meta["python"]["implementation"], platform.python_implementation())
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        self.assertEqual(meta["python"]["gil"], gil)
        self.assertEqual(meta["triton"], triton.__version__)
        self.assertEqual(meta["fla"], None if "fla" not in sys.modules else meta["fla"])
        # Stock Triton: run resolves (through the probe's own wrapper) to Autotuner.run.
        self.assertEqual(meta["run"]["module"], "triton.runtime.autotuner")
        self.assertEqual(meta["run"]["qualname"], "Autotuner.run")
        self.assertTrue(meta["run"]["file"].endswith(os.path.join("triton", "runtime", "autotuner.py")))
        self.assertEqual(meta["bench"]["qualname"], "Autotuner._bench")
        self.assertNotIn("fields", meta)
        self.assertEqual(meta["hooks"]["post_hook"]["qualname"], "Autotuner.__init__.<locals>._post_hook")
        self.assertFalse(meta["hooks"]["post_hook"]["user_defined"])
        self.assertEqual(meta["class"], {"module": "triton.runtime.autotuner", "qualname": "Autotuner"})
        # The mark still parses as the recorder's grammar expects: one token per field.
        self.assertTrue(all("=" in tok for tok in first.split(" ")[1:]))

    def test_identity_of_a_tuner_and_of_what_it_holds(self):
        tuner = make_tuner(2)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        ident = _detail(self.begins()[0])["identity"]
        self.assertEqual(ident["self"], hex(id(tuner)))
        self.assertEqual(ident["fields"]["cache"], hex(id(tuner.cache)))
        self.assertEqual(ident["fields"]["configs"], hex(id(tuner.configs)))
        # Triton's default hooks close over the tuner they were made for.
        self.assertEqual(ident["hooks"]["post_hook"]["tuner"], hex(id(tuner)))
        self.assertEqual(ident["hooks"]["pre_hook"]["tuner"], hex(id(tuner)))

    def test_shallow_copies_share_the_originals_cache_and_hooks(self):
        """copy.copy of a tuner keeps the original's cache dict and its hooks, whose closures
        write the original's restore_copies: the GPU's 7 of 8 KeyError with a tuner per thread.
        Each copy is described at its own first call, its hooks and launches marked as its own."""
        orig = make_tuner(3)
        copies = [copy.copy(orig) for _ in range(8)]
        barrier = threading.Barrier(8)
        errors = []

        def worker(i):
            barrier.wait()
            try:
                copies[i].run(FakeTensor(i), FakeTensor(i), 4096)
            except KeyError as e:
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metas = [_detail(t) for t in self.begins() if _detail(t) and "v" in _detail(t)]
        self.assertEqual(sorted(m["identity"]["self"] for m in metas),
                         sorted(hex(id(c)) for c in copies))
        for m in metas:
            ident = m["identity"]
            self.assertEqual(ident["fields"]["cache"], hex(id(orig.cache)))
            self.assertEqual(ident["hooks"]["pre_hook"]["tuner"], hex(id(orig)))
            self.assertEqual(ident["hooks"]["post_hook"]["tuner"], hex(id(orig)))
        marked = {re.search(r"tuner=(\S+)", t).group(1) for t in self.marks
                  if "kind=pre-hook" in t or "kind=launch" in t}
        self.assertTrue(marked <= {hex(id(c)) for c in copies}, marked)
        self.assertNotIn(hex(id(orig)), marked)

    def test_a_reassigned_cache_is_described_again(self):
        tuner = make_tuner(2)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        shared = {}
        tuner.cache = shared
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        details = [_detail(t) for t in self.begins()]
        self.assertIsNone(details[1])
        self.assertEqual(details[2]["identity"]["fields"]["cache"], hex(id(shared)))

    def test_every_call_carries_its_restore_value_shapes(self):
        # A post-hook that restores another call's copy into a tensor of another shape raises
        # RuntimeError; of the same shape, it restores silently: replay needs the shapes.
        tuner = make_tuner(2)
        a, b = FakeTensor(0), FakeTensor(1)
        a.shape, b.shape = (4096, 1024), (4096, 512)
        tuner.run(FakeTensor(0), a, 4096)
        tuner.run(FakeTensor(1), b, 2048)
        first, second = [_detail(t) for t in self.begins()]
        self.assertEqual(first["v"], rerace_probe.METADATA_VERSION)  # the metadata, with the shapes
        self.assertEqual(first["restore_shapes"], [[4096, 1024]])
        self.assertEqual(second, {"restore_shapes": [[4096, 512]]})

    def test_metadata_once_when_threads_start_together(self):
        tuner = make_tuner(2)
        barrier = threading.Barrier(8)

        def worker(i):
            barrier.wait()
            try:
                tuner.run(FakeTensor(i), FakeTensor(i), 4096)
            except Exception:
                pass  # the race itself is not what this test is about

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        begins = self.begins()
        self.assertEqual(len(begins), 8)
        self.assertEqual(sum(_detail(t) is not None for t in begins), 1)

    def test_a_patched_class_is_recognised(self):
        configs = [triton.Config({"BLOCK_N": 64 << i}, num_warps=4) for i in range(2)]
        tuner = PatchedTuner(FakeKernel(), ["x_ptr", "y_ptr", "N"], configs, key=["N"], reset_to_zero=None,
                             restore_value=["y_ptr"], do_bench=fake_bench)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        meta = _detail(self.begins()[0])
        self.assertEqual(meta["run"]["module"], PatchedTuner.__module__)
        self.assertEqual(meta["run"]["qualname"], "PatchedTuner.run")
        self.assertEqual(meta["autotuner_run"]["qualname"], "Autotuner.run")
        nargs = meta["fields"]["nargs"]
        self.assertEqual(nargs["kind"], "property")
        self.assertEqual(nargs["fget"]["qualname"], "PatchedTuner.nargs")
        self.assertEqual(nargs["fset"]["module"], PatchedTuner.__module__)
        self.assertNotIn("restore_copies", meta["fields"])

    def test_a_patch_applied_before_the_probe_is_still_named(self):
        def user_run(self, *args, **kwargs):
            return user_run.stock(self, *args, **kwargs)

        class Early(triton_autotuner.Autotuner):
            pass

        # The user's patch first, then the probe wraps it (as when Triton was patched before
        # the probe's import hook ran): the metadata names the user's run, not the probe's.
        user_run.stock = triton_autotuner.Autotuner.run
        Early.run = user_run
        Early._rerace_patched = False
        rerace_probe.patch_autotuner(type("Mod", (), {"Autotuner": Early}))
        tuner = Early(FakeKernel(), ["x_ptr", "y_ptr", "N"], [triton.Config({"BLOCK_N": 64})] * 2,
                      key=["N"], reset_to_zero=None, restore_value=["y_ptr"], do_bench=fake_bench)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        meta = _detail(self.begins()[0])
        self.assertEqual(meta["run"]["qualname"], user_run.__qualname__)

    def _patched_after_probe(self):
        """A tuner class the probe wrapped, then a team's lock put on its ``run``; and a
        library's subclass that took the probe-wrapped ``run`` before the lock (the incident)."""
        class Fresh(triton_autotuner.Autotuner):
            pass

        Fresh._rerace_patched = False
        rerace_probe.patch_autotuner(type("Mod", (), {"Autotuner": Fresh}))
        orig = Fresh.run

        class Library(Fresh):
            def run(self, *args, **kwargs):
                return orig(self, *args, **kwargs)

        lock = threading.Lock()

        def locked_run(self, *args, **kwargs):
            with lock:
                return orig(self, *args, **kwargs)

        Fresh.run = locked_run
        return Fresh, Library

    def _one_call(self, cls):
        tuner = cls(FakeKernel(), ["x_ptr", "y_ptr", "N"], [triton.Config({"BLOCK_N": 64})] * 2,
                    key=["N"], reset_to_zero=None, restore_value=["y_ptr"], do_bench=fake_bench)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        return _detail(self.begins()[0])["reach"]["Autotuner.run"]

    def test_each_call_says_whether_a_later_patch_was_on_its_stack(self):
        fresh, _ = self._patched_after_probe()
        reach = self._one_call(fresh)
        self.assertTrue(reach["on_stack"])
        self.assertTrue(reach["by"].startswith("MetadataTest._patched_after_probe.<locals>.locked_run "
                                               "(test_probe.py:"), reach["by"])
        self.assertRegex(reach["patch"], r"^test_probe\.py:\d+$")

    def test_a_subclass_holding_the_original_run_bypasses_the_patch(self):
        _, library = self._patched_after_probe()
        reach = self._one_call(library)
        self.assertFalse(reach["on_stack"])
        self.assertTrue(reach["by"].startswith("MetadataTest._patched_after_probe.<locals>.Library.run "
                                               "(test_probe.py:"), reach["by"])

    def test_an_unpatched_call_carries_no_reach(self):
        tuner = make_tuner(2)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        tuner.run(FakeTensor(0), FakeTensor(0), 4096)
        self.assertNotIn("reach", _detail(self.begins()[0]))
        self.assertIsNone(_detail(self.begins()[1]))


# A patch's run under the probe, in its own interpreter: eight threads, one cold tuner, the fake
# kernel. Prints the errors, how many configs were benchmarked and the first call's metadata.
_FIX_SCRIPT = r"""
import importlib.util, json, re, sys, threading, urllib.parse
import rerace_probe, test_probe as tp
marks = []
lock = threading.Lock()
def emit(t):
    with lock:
        marks.append(t)
rerace_probe.set_emitter(emit)
from triton.runtime import autotuner
rerace_probe.patch_autotuner(autotuner)
A = autotuner.Autotuner
state = lambda: [vars(A).get(n) for n in ("run", "nargs", "restore_copies")] + [sorted(vars(A))]
idempotent = True
for n, path in enumerate(sys.argv[1:]):
    for again in range(2):  # a second import (under another name) must change nothing
        spec = importlib.util.spec_from_file_location("patch%d_%d" % (n, again), path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        if again == 0:
            first = state()
        else:
            idempotent = idempotent and state() == first
tuner = tp.make_tuner(6)
barrier = threading.Barrier(8)
errors = []
def worker(i):
    x, y = tp.FakeTensor(i), tp.FakeTensor(i)
    barrier.wait()
    try:
        tuner.run(x, y, 4096)
    except Exception as e:
        errors.append("%s: %s" % (type(e).__name__, e))
ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
details = [json.loads(urllib.parse.unquote(m.group(1))) for t in marks
           for m in [re.search(r" detail=(\S+)", t)] if m and "kind=call-begin" in t]
meta = [d for d in details if "v" in d]
print(json.dumps({"idempotent": idempotent, "errors": errors, "benches": sum("kind=bench-begin" in t for t in marks),
                  "launches": tuner.fn._fn.launches if hasattr(tuner.fn, "_fn") else tuner.fn.launches,
                  "meta": meta, "reach": [d["reach"] for d in details if "reach" in d]}))
"""

HERE = os.path.dirname(os.path.abspath(__file__))
FIXES = os.path.join(REPO, "replay", "engine", "python", "rerace_real", "fixes")


@unittest.skipIf(triton is None, "triton not installed")
class FixesTest(unittest.TestCase):
    """The named fixes on the real Triton code, eight threads, a cold cache, under the probe."""

    def run_fix(self, *files):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([PROBE_DIR, HERE]))
        env.pop("NVTX_INJECTION64_PATH", None)
        out = subprocess.run([sys.executable, "-c", _FIX_SCRIPT] + [os.path.join(FIXES, f) for f in files],
                             env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertTrue(res["idempotent"], "importing %s twice changed Autotuner again" % (files,))
        self.assertEqual(len(res["meta"]), 1)
        res["meta"] = res["meta"][0]
        return res

    def test_the_index_names_every_patch_file(self):
        sys.path.insert(0, PROBE_DIR)
        try:
            spec = importlib_util.spec_from_file_location("_fixes_index", os.path.join(FIXES, "__init__.py"))
            index = importlib_util.module_from_spec(spec)
            spec.loader.exec_module(index)
        finally:
            sys.path.pop(0)
        self.assertEqual(sorted(index.FIXES), ["lock-key-event", "lock-run", "tls-nargs", "tls-state"])
        for name in index.FIXES:
            self.assertTrue(os.path.exists(index.path(name)), name)
        with self.assertRaisesRegex(KeyError, "engine option"):
            index.path("prewarm")

    def test_stock_fails(self):
        res = self.run_fix()
        self.assertIn("KeyError: 'y_ptr'", res["errors"])
        self.assertEqual(res["meta"]["run"]["qualname"], "Autotuner.run")

    def test_lock_run_holds_and_is_recognised(self):
        res = self.run_fix("lock_run.py")
        self.assertEqual(res["errors"], [])
        self.assertEqual(res["benches"], 6)  # one thread tuned; seven found the key cached
        self.assertEqual(res["launches"], 6 * 3 + 8)
        self.assertTrue(res["meta"]["run"]["file"].endswith("lock_run.py"))
        self.assertEqual(res["meta"]["run"]["qualname"], "_apply.<locals>.run")
        # Patch reach (issue 29): the lock was on the stack of each of the eight calls.
        self.assertEqual([r["Autotuner.run"]["on_stack"] for r in res["reach"]], [True] * 8)

    def test_tls_nargs_still_fails(self):
        res = self.run_fix("tls_nargs.py")
        self.assertIn("KeyError: 'y_ptr'", res["errors"])
        fields = res["meta"]["fields"]
        self.assertEqual(fields["nargs"]["fget"]["qualname"], "_get_nargs")
        self.assertTrue(fields["nargs"]["fget"]["file"].endswith("tls_nargs.py"))
        self.assertNotIn("restore_copies", fields)

    def test_tls_state_holds_with_duplicate_tuning(self):
        res = self.run_fix("tls_state.py")
        self.assertEqual(res["errors"], [])
        self.assertGreater(res["benches"], 6)  # several threads tuned the same key
        fields = res["meta"]["fields"]
        self.assertTrue(fields["restore_copies"]["fset"]["file"].endswith("tls_state.py"))

    def test_lock_key_event_holds_and_tunes_once(self):
        res = self.run_fix("lock_key_event.py")
        self.assertEqual(res["errors"], [])
        self.assertEqual(res["benches"], 6)
        self.assertTrue(res["meta"]["run"]["file"].endswith("lock_key_event.py"))


class DisabledTest(unittest.TestCase):
    def test_without_a_recorder_nothing_is_emitted(self):
        rerace_probe.set_emitter(None)
        before = len(sys.meta_path)
        rerace_probe.install()
        self.assertEqual(len(sys.meta_path), before)


if __name__ == "__main__":
    unittest.main()


class SyncTest(unittest.TestCase):
    """The program's own synchronization as release/acquire marks (rerace_probe/sync.py), on the
    real threading, queue and concurrent.futures."""

    def setUp(self):
        self.marks = []
        self.lock = threading.Lock()

        def emit(text):
            with self.lock:
                self.marks.append((threading.current_thread().name, text))

        rerace_probe.set_emitter(emit)
        rerace_probe.install_sync()

    def tearDown(self):
        rerace_probe.set_emitter(None)

    def sync(self, what=None):
        out = []
        for i, (thread, text) in enumerate(self.marks):
            if not text.startswith("rerace:sync "):
                continue
            f = dict(kv.split("=", 1) for kv in text.split(" ")[1:])
            if what is None or f["what"] == what:
                out.append((i, thread, f["kind"], f["what"], f["obj"], int(f["seq"])))
        return out

    def test_a_started_thread_follows_its_start_and_a_join_follows_its_end(self):
        t = threading.Thread(target=lambda: None, name="child")
        t.start()
        t.join()
        got = [(th, k, w) for (_, th, k, w, obj, _) in self.sync() if obj == hex(id(t))]
        me = threading.current_thread().name
        self.assertEqual(got, [(me, "release", "Thread.start"), ("child", "acquire", "Thread.start"),
                               ("child", "release", "Thread.end"), (me, "acquire", "Thread.end")])

    def test_a_wait_that_returned_follows_the_set(self):
        ev = threading.Event()
        t = threading.Thread(target=ev.wait, name="waiter")
        t.start()
        time.sleep(0.01)
        ev.set()
        t.join()
        self.assertFalse(threading.Event().wait(0.001))  # a wait that timed out: no acquire
        got = [(th, k) for (_, th, k, _, obj, _) in self.sync("Event") if obj == hex(id(ev))]
        self.assertEqual(got, [(threading.current_thread().name, "release"), ("waiter", "acquire")])
        self.assertEqual(len(self.sync("Event")), 2)

    def test_the_kth_item_got_follows_the_kth_put(self):
        import queue
        q = queue.Queue()
        got = []
        t = threading.Thread(target=lambda: got.extend(q.get() for _ in range(3)), name="consumer")
        t.start()
        for i in range(3):
            q.put(i)
        t.join()
        marks = [(i, k, seq) for (i, _, k, _, obj, seq) in self.sync("Queue") if obj == hex(id(q))]
        puts = {seq: i for (i, k, seq) in marks if k == "release"}
        gets = {seq: i for (i, k, seq) in marks if k == "acquire"}
        self.assertEqual(sorted(puts), [0, 1, 2])
        self.assertEqual(sorted(gets), [0, 1, 2])
        for k in range(3):
            self.assertLess(puts[k], gets[k])
        # A LIFO queue's get may take any earlier put: not marked.
        lifo = queue.LifoQueue()
        lifo.put(1)
        lifo.get()
        self.assertEqual([m for m in self.sync("Queue") if m[4] == hex(id(lifo))], [])

    def test_submitted_work_follows_its_submit_and_a_result_follows_the_work(self):
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as ex:
            fut = ex.submit(lambda: 7)
            self.assertEqual(fut.result(), 7)
        me = threading.current_thread().name
        sub = [(th, k) for (_, th, k, _, obj, _) in self.sync("Executor.submit") if obj == hex(id(fut))]
        self.assertEqual(sub, [(me, "release"), ("pool_0", "acquire")])
        res = [(th, k) for (_, th, k, _, obj, _) in self.sync("Future") if obj == hex(id(fut))]
        self.assertEqual(res, [("pool_0", "release"), (me, "acquire")])

    def test_every_arrival_of_a_generation_comes_before_it_passes(self):
        b = threading.Barrier(3)
        ts = [threading.Thread(target=lambda: (b.wait(), b.wait()), name="p%d" % i) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        marks = self.sync("Barrier")
        for gen in (0, 1):
            arrive = [i for (i, _, k, _, _, seq) in marks if k == "release" and seq == gen]
            passed = [i for (i, _, k, _, _, seq) in marks if k == "acquire" and seq == gen]
            self.assertEqual(len(arrive), 3)
            self.assertEqual(len(passed), 3)
            self.assertLess(max(arrive), min(passed))

    def test_marks_are_bounded(self):
        from rerace_probe import sync
        limit, sync.MAX_MARKS = sync.MAX_MARKS, 3
        sync._state["marks"] = 0
        try:
            ev = threading.Event()
            for _ in range(5):
                ev.set()
            kinds = [k for (_, _, k, _, _, _) in self.sync()]
            self.assertEqual(kinds, ["release"] * 3 + ["overflow"])
        finally:
            sync.MAX_MARKS = limit
            sync._state["marks"] = 0
