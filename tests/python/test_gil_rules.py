"""Tests of rerace_real.gil: the per-version places where CPython can hand the GIL over.

Static tests run everywhere. The measured tests use the deterministic probe of
experiments/gil_storm.py (a pending signal is handled at exactly the eval-breaker checks, see
its docstring) on the running interpreter: one trial decides, nothing depends on timing, so
they cannot flake. The thread storm (statistical) stays in the experiment script.
"""

import dis
import importlib.util
import os
import signal
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "replay", "engine", "python"))
from rerace_real import gil  # noqa: E402

RULES = gil.rules_for_running()
RUNNING = sys.version_info[:2]


def _load_storm():
    path = os.path.join(HERE, "..", "..", "tools", "experiments", "gil_storm.py")
    spec = importlib.util.spec_from_file_location("gil_storm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _probe_unavailable():
    if RULES.free_threaded:
        return "free-threaded build: no GIL to probe"
    if not hasattr(signal, "SIGUSR1") or not hasattr(signal, "SIGUSR2"):
        return "no SIGUSR1/SIGUSR2 on this platform"
    if threading.current_thread() is not threading.main_thread():
        return "signal handlers run only in the main thread"
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return "a tracer or profiler is active (coverage?): it changes specialization"
    if RUNNING not in gil.KNOWN_VERSIONS:
        return "rules for %d.%d are not modelled" % RUNNING
    return None


class RulesTableTest(unittest.TestCase):
    """What the rules say, per version, from the interpreter sources."""

    def test_versions_and_warmup(self):
        expect = {(3, 10): 0, (3, 11): 7, (3, 12): 1, (3, 13): 1, (3, 14): 1}
        for v, warmup in expect.items():
            r = gil.rules_for(v)
            with self.subTest(version=v):
                self.assertEqual(r.warmup, warmup)
                self.assertEqual(r.name, "CPython %d.%d (GIL)" % v)
                self.assertFalse(r.free_threaded)
                self.assertTrue(r.at_entry(None))

    def test_backward_jumps_check(self):
        self.assertTrue(gil.rules_for((3, 10)).at_opcode("JUMP_ABSOLUTE", False))
        for v in [(3, 11), (3, 12), (3, 13), (3, 14)]:
            r = gil.rules_for(v)
            for warm in (False, True):
                with self.subTest(version=v, warm=warm):
                    self.assertTrue(r.at_opcode("JUMP_BACKWARD", warm))
                    self.assertTrue(r.at_opcode("RESUME", warm))
                    self.assertFalse(r.at_opcode("JUMP_BACKWARD_NO_INTERRUPT", warm))
                    self.assertFalse(r.at_opcode("JUMP_FORWARD", warm))
                    self.assertFalse(r.at_opcode("STORE_ATTR", warm))
                    self.assertFalse(r.at_opcode("LOAD_ATTR", warm))
                    self.assertFalse(r.at_opcode("DICT_UPDATE", warm))
                    self.assertFalse(r.at_opcode("BUILD_MAP", warm))
                    self.assertFalse(r.at_opcode("CALL", warm))  # the check comes after

    def test_conditional_jumps(self):
        r = gil.rules_for((3, 10))
        self.assertTrue(r.at_opcode("POP_JUMP_IF_FALSE", False))               # unknown
        self.assertTrue(r.at_opcode("POP_JUMP_IF_FALSE", False, jumped=True))
        self.assertFalse(r.at_opcode("POP_JUMP_IF_FALSE", False, jumped=False))
        self.assertFalse(r.at_opcode("JUMP_IF_FALSE_OR_POP", False))
        self.assertTrue(gil.rules_for((3, 11)).at_opcode("POP_JUMP_BACKWARD_IF_TRUE", True))
        for v in [(3, 11), (3, 12), (3, 13), (3, 14)]:
            self.assertFalse(gil.rules_for(v).at_opcode("POP_JUMP_IF_FALSE", False))

    def test_len_and_friends_do_not_check_when_warm(self):
        quiet = [(len, None), (isinstance, None), (type, 1), ([].append, None)]
        loud = [(abs, None), (hasattr, None), (str, 1), (tuple, 1), (dict, 1), (zip, 2),
                ([].pop, None), (type, 3), (type, None), (max, None)]
        for v in [(3, 11), (3, 12), (3, 13), (3, 14)]:
            r = gil.rules_for(v)
            for func, nargs in quiet + loud:
                with self.subTest(version=v, func=func):
                    self.assertTrue(r.after_c_call(func, False, nargs=nargs))
                    self.assertEqual(r.after_c_call(func, True, nargs=nargs),
                                     (func, nargs) in loud)
        r10 = gil.rules_for((3, 10))
        for func, nargs in quiet + loud:
            self.assertTrue(r10.after_c_call(func, True, nargs=nargs))

    def test_python_callees(self):
        def callee():
            pass
        self.assertTrue(gil.rules_for((3, 10)).after_call(callee, True))
        for v in [(3, 11), (3, 12), (3, 13), (3, 14)]:
            self.assertFalse(gil.rules_for(v).after_call(callee, False))

    def test_exception_handlers(self):
        self.assertTrue(gil.rules_for((3, 10)).at_exception_handler())
        for v in [(3, 11), (3, 12), (3, 13), (3, 14)]:
            self.assertFalse(gil.rules_for(v).at_exception_handler())

    def test_blocking(self):
        lock = threading.Lock()
        import time
        for func in (time.sleep, lock.acquire, os.read, os.write):
            self.assertTrue(RULES.blocking(func), func)
        for func in (len, abs, [].append, dict, lock.release, ", ".join):
            self.assertFalse(RULES.blocking(func), func)

    def test_free_threaded_and_unknown(self):
        ft = gil.rules_for((3, 13), free_threaded=True)
        self.assertTrue(ft.free_threaded)
        self.assertIn("free-threaded", ft.name)
        for op in ("STORE_ATTR", "LOAD_ATTR", "DICT_UPDATE", "NOP"):
            self.assertTrue(ft.at_opcode(op, True))
        self.assertTrue(ft.after_c_call(len, True))
        old = gil.rules_for((3, 9))
        self.assertTrue(old.at_opcode("STORE_ATTR", True))  # conservative
        self.assertTrue(old.note)
        new = gil.rules_for((3, 15))
        self.assertEqual(new.warmup, gil.rules_for((3, 14)).warmup)
        self.assertIn("3.14", new.note)
        self.assertEqual(gil.rules_for((3, 12, 1, "final", 0)).name, "CPython 3.12 (GIL)")

    def test_running(self):
        free = getattr(sys, "_is_gil_enabled", lambda: True)() is False
        self.assertEqual(RULES.free_threaded, free)
        self.assertEqual(RULES.version, RUNNING)


class RunningBytecodeTest(unittest.TestCase):
    """The opnames the rules key on are the ones this interpreter's `dis` shows."""

    def test_loop_has_a_checking_backward_jump(self):
        def loop(xs):
            for x in xs:
                pass
        names = [i.opname for i in dis.get_instructions(loop)]
        self.assertTrue(any(RULES.at_opcode(n, w) for n in names for w in (False, True)),
                        names)
        for w in (False, True):
            checks = [n for n in names if RULES.at_opcode(n, w, jumped=False)]
            self.assertTrue(checks, names)

    def test_straight_line_attribute_code_has_no_check(self):
        def straight(self, a, b, kw):
            self.nargs = a
            q = self.configs
            d = {"a": 1, **kw}
            return {**self.nargs, **kw}
        if RULES.free_threaded:
            self.skipTest("free-threaded: everything is a point")
        names = [i.opname for i in dis.get_instructions(straight)][1:]  # not the RESUME
        for w in (False, True):
            self.assertEqual([n for n in names if RULES.at_opcode(n, w)], [], names)


class TritonWindowTest(unittest.TestCase):
    """autotuner.py 213-216 (Triton 3.6): `self.nargs = dict(...)` ... `{**self.nargs, ...}`
    has only `len(self.configs)` between: split when cold, atomic when warm (3.11+)."""

    def test_run_window(self):
        try:
            from triton.runtime import autotuner
        except Exception as e:  # pragma: no cover - depends on the machine
            self.skipTest("triton is not importable: %s" % e)
        ins = list(dis.get_instructions(autotuner.Autotuner.run))
        start = next(n for n, i in enumerate(ins)
                     if i.opname == "STORE_ATTR" and i.argval == "nargs")
        end = next(n for n, i in enumerate(ins)
                   if n > start and i.opname in ("DICT_UPDATE", "DICT_MERGE"))
        window = ins[start + 1:end]
        globals_loaded = [i.argval for i in window if i.opname == "LOAD_GLOBAL"]
        self.assertEqual(globals_loaded, ["len"], [i.opname for i in window])
        calls = [i for i in window if i.opname.startswith("CALL")]
        self.assertEqual(len(calls), 1)
        for warm in (False, True):
            points = [i.opname for i in window
                      if RULES.at_opcode(i.opname, warm, jumped=False)]
            if RULES.after_c_call(len, warm):
                points.append("after len()")
            expect_split = RULES.free_threaded or RUNNING <= (3, 10) or not warm
            self.assertEqual(bool(points), expect_split, (warm, points))


@unittest.skipIf(_probe_unavailable(), _probe_unavailable())
class MeasuredTest(unittest.TestCase):
    """The rules against the running interpreter, with the deterministic signal probe."""

    @classmethod
    def setUpClass(cls):
        cls.storm = _load_storm()

    def test_rules_never_miss_a_check(self):
        for kind in sorted(self.storm.WINDOWS):
            for warm, calls in ((False, 0), (True, 20)):
                with self.subTest(window=kind, warm=warm):
                    measured, where = self.storm.probe(kind, calls)
                    predicted, why = self.storm.predict(kind, warm, RULES)
                    if measured == "split":
                        self.assertEqual(predicted, "split", "check at %s" % where)

    def test_rules_exact_on_the_windows_that_matter(self):
        # where the rules are exact (no conservative guess is involved)
        exact = ["triton_len", "nothing", "attr", "dict_display", "subscr_in", "isinstance",
                 "type1", "list_append", "abs", "str1", "dict_call", "py_call", "loop"]
        for kind in exact:
            for warm, calls in ((False, 0), (True, 20)):
                with self.subTest(window=kind, warm=warm):
                    self.assertEqual(self.storm.probe(kind, calls)[0],
                                     self.storm.predict(kind, warm, RULES)[0])

    def test_atomic_windows_are_never_split(self):
        k = 5
        for kind in ["nothing", "attr", "dict_display", "subscr_in", "triton_len",
                     "isinstance"]:
            for warm, calls in ((False, 0), (True, 20)):
                if self.storm.predict(kind, warm, RULES)[0] != "atomic":
                    continue
                with self.subTest(window=kind, warm=warm):
                    for _ in range(k):
                        self.assertEqual(self.storm.probe(kind, calls)[0], "atomic")

    def test_warmup_count(self):
        if RUNNING == (3, 10):
            self.skipTest("no specialization in 3.10")
        # the len() window turns atomic after exactly `warmup` earlier calls
        self.assertEqual(self.storm.warm_threshold("triton_len"), RULES.warmup)


if __name__ == "__main__":
    unittest.main()
