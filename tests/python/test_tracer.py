"""The GIL mode's tracer (replay/engine/python/rerace_real/control.py): the hand-over places
it marks, under sys.settrace and under sys.monitoring (CPython 3.12+)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_fixtures  # noqa: E402,F401 (rerace_real on sys.path)
from rerace_real import control  # noqa: E402


def _with_hooks(value, fn):
    old = os.environ.get("RERACE_GIL_HOOKS")
    os.environ["RERACE_GIL_HOOKS"] = value
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["RERACE_GIL_HOOKS"]
        else:
            os.environ["RERACE_GIL_HOOKS"] = old


class TracerTest(unittest.TestCase):
    """GIL mode: the tracer marks a hand-over place where the running CPython has one (a
    backward jump, a call that checks after it) and none in straight-line attribute code.
    This class runs the sys.settrace tracer; MonitoringTracerTest the same cases on
    sys.monitoring (3.12+), which must mark the same places."""

    HOOKS = "python"

    def make_tracer(self, rules, watched):
        return _with_hooks(self.HOOKS, lambda: control.Tracer(rules, watched))

    def setUp(self):
        from rerace_real import gil
        self.rules = gil.rules_for(sys.version_info[:2])
        self.tracer = self.make_tracer(self.rules, lambda f: f == __file__)
        self.tracer.install()
        self.ts = control.ThreadState(0, "t")
        self.ts.baton.release()
        control._local.ts = self.ts

    def tearDown(self):
        sys.settrace(None)
        sys.setprofile(None)
        control._local.ts = None
        self.tracer.close()

    def run_traced(self, fn, *args):
        self.ts.new_step()
        self.tracer.thread_start()
        try:
            fn(*args)
        finally:
            self.tracer.thread_stop(self.ts)
            self.ts.traced = True
        return self.ts.opportunity

    def test_straight_line_attribute_code_has_no_hand_over_place(self):
        class O:
            pass
        o = O()

        def body():
            o.a = {"x": 1}
            o.b = {**o.a}
            o.c = o.b["x"]

        body()  # warm
        self.ts.opportunity = False
        # The call of body itself is a function entry: start the step inside it.
        calls = []

        def probe():
            self.ts.new_step()
            o.a = {"x": 1}
            o.b = {**o.a}
            o.c = o.b["x"]
            calls.append(self.ts.opportunity)

        self.run_traced(probe)
        self.assertEqual(calls, [False])

    def test_a_loop_is_a_hand_over_place(self):
        seen = []

        def probe():
            self.ts.new_step()
            for i in range(3):
                pass
            seen.append(self.ts.opportunity)

        self.run_traced(probe)
        self.assertEqual(seen, [True])

    def test_a_class_call_is_a_hand_over_place(self):
        seen = []

        def probe():
            self.ts.new_step()
            d = dict(a=1)
            seen.append(self.ts.opportunity)
            return d

        self.run_traced(probe)
        self.assertEqual(seen, [True])
        # settrace: dict(...) reports no C call to sys.setprofile; the CALL's frame's next
        # opcode event marked it and let the pending call go.
        self.assertIsNone(self.ts.pending_call)

    def test_a_function_entry_is_a_hand_over_place(self):
        seen = []

        def callee():
            return 1

        def probe():
            self.ts.new_step()
            callee()
            seen.append(self.ts.opportunity)

        self.run_traced(probe)
        self.assertEqual(seen, [True])

    def test_len_checks_while_cold_and_not_once_specialized(self):
        seen = []
        items = [1, 2]

        def probe():
            self.ts.new_step()
            len(items)
            seen.append(self.ts.opportunity)

        for _ in range(self.rules.warmup + 2):
            self.run_traced(probe)
        # The generic CALL checks after a C callee (the first `warmup` executions);
        # CALL_NO_KW_LEN / CALL_LEN, from the next one on, does not.
        self.assertEqual(seen, [True] * self.rules.warmup + [False, False])

    def test_a_blocking_call_is_a_hand_over_place_even_warm(self):
        import time
        seen = []

        def probe():
            self.ts.new_step()
            time.sleep(0)
            seen.append(self.ts.opportunity)

        for _ in range(self.rules.warmup + 2):
            self.run_traced(probe)
        self.assertEqual(seen, [True] * (self.rules.warmup + 2))

    def test_nothing_after_the_thread_stops(self):
        seen = []

        def probe():
            self.ts.new_step()
            self.tracer.thread_stop(self.ts)
            for i in range(3):
                pass
            seen.append(self.ts.opportunity)

        self.run_traced(probe)
        self.assertEqual(seen, [False])


@unittest.skipIf(not hasattr(sys, "monitoring"), "sys.monitoring is CPython 3.12+")
class MonitoringTracerTest(TracerTest):
    """The sys.monitoring tracer with its Python hooks (the reference)."""
    HOOKS = "python"

    def make_tracer(self, rules, watched):
        t = _with_hooks(self.HOOKS, lambda: control.MonitoringTracer.make(rules, watched))
        self.assertIsNotNone(t, "no free sys.monitoring tool id")
        return t

    def test_make_tracer_chooses_sys_monitoring_unless_told_settrace(self):
        self.assertIsInstance(self.tracer, control.MonitoringTracer)
        old = os.environ.get("RERACE_GIL_TRACER")
        os.environ["RERACE_GIL_TRACER"] = "settrace"
        try:
            t = control.make_tracer(self.rules, lambda f: False)
            self.assertIs(type(t), control.Tracer)
        finally:
            if old is None:
                del os.environ["RERACE_GIL_TRACER"]
            else:
                os.environ["RERACE_GIL_TRACER"] = old

# The C hooks (replay/engine/cext, built as RERACE_GIL_MODULE_DIR/_rerace_gil.abi3.so): ctest
# sets RERACE_GIL_MODULE_DIR where the build made the module, and then it must load.
_GIL_DIR = os.environ.get("RERACE_GIL_MODULE_DIR", "")
if _GIL_DIR and _GIL_DIR not in sys.path:
    sys.path.append(_GIL_DIR)


def _c_hooks_missing(monitoring):
    if monitoring and not hasattr(sys, "monitoring"):
        return "sys.monitoring is CPython 3.12+"
    if not _GIL_DIR:
        return "this build made no _rerace_gil (no CPython 3.11+ headers: RERACE_GIL_MODULE_DIR unset)"
    return None


@unittest.skipIf(_c_hooks_missing(False) is not None, _c_hooks_missing(False) or "")
class CHooksSettraceTest(TracerTest):
    """Every settrace case with the hooks in C (global_trace, local_trace, profile)."""
    HOOKS = "c"

    def test_the_hooks_are_the_c_ones(self):
        self.assertEqual(self.tracer.hooks, "C (_rerace_gil)")
        self.assertEqual(type(self.tracer.profile.__self__).__module__, "_rerace_gil")


@unittest.skipIf(_c_hooks_missing(True) is not None, _c_hooks_missing(True) or "")
class CHooksTracerTest(MonitoringTracerTest):
    """Every case above with the hooks in C: the same hand-over places."""
    HOOKS = "c"

    def test_the_hooks_are_the_c_ones(self):
        self.assertEqual(self.tracer.hooks, "C (_rerace_gil)")
        self.assertEqual(type(self.tracer.c_hooks).__module__, "_rerace_gil")

    def test_a_method_is_decided_by_the_type_it_is_bound_to(self):
        # list.append checks after it cold and not once specialized; the same descriptor bound
        # to a subclass of list stays a checking call (specialize.c: only list itself).
        class Sub(list):
            pass
        seen = []
        items, sub = [], Sub()

        def probe(target):
            self.ts.new_step()
            target.append(1)
            seen.append(self.ts.opportunity)

        for _ in range(self.rules.warmup + 2):
            self.run_traced(probe, items)
        self.assertEqual(seen, [True] * self.rules.warmup + [False, False])
        del seen[:]
        for _ in range(self.rules.warmup + 2):
            self.run_traced(probe, sub)
        self.assertEqual(seen[-1], True)

    def test_counts_are_shared_with_logical_stand_ins(self):
        # logical.py reports its stand-ins for builtin calls through tracer.c_returned: the C
        # hooks' count of that site, the one the C_RETURN events add to.
        code = self.test_counts_are_shared_with_logical_stand_ins.__code__
        self.tracer.c_returned(self.ts, code, 4, len, None)
        self.tracer.c_returned(self.ts, code, 4, len, None)
        self.assertEqual(self.tracer.c_hooks.count(code, 4), 2)
        self.assertEqual(self.tracer.c_hooks.count(code, 6), 0)

    def test_c_asked_where_it_cannot_load_is_an_error(self):
        from rerace_real import gil_tracer
        old = sys.modules.pop("_rerace_gil", None)
        saved = list(sys.path)
        sys.path[:] = [p for p in sys.path if p != _GIL_DIR]
        try:
            with self.assertRaises(gil_tracer.HooksUnavailable) as e:
                _with_hooks("c", gil_tracer._hooks_module)
            self.assertIn("_rerace_gil does not import", str(e.exception))
            self.assertIsNone(_with_hooks("", gil_tracer._hooks_module))
        finally:
            sys.path[:] = saved
            if old is not None:
                sys.modules["_rerace_gil"] = old


if __name__ == "__main__":
    unittest.main()
