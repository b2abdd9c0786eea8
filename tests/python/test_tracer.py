"""The GIL mode's tracer (replay/engine/python/rerace_real/control.py): the hand-over places
it marks, under sys.settrace and under sys.monitoring (CPython 3.12+)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_fixtures  # noqa: E402,F401 (rerace_real on sys.path)
from rerace_real import control  # noqa: E402


class TracerTest(unittest.TestCase):
    """GIL mode: the tracer marks a hand-over place where the running CPython has one (a
    backward jump, a call that checks after it) and none in straight-line attribute code.
    This class runs the sys.settrace tracer; MonitoringTracerTest the same cases on
    sys.monitoring (3.12+), which must mark the same places."""

    def make_tracer(self, rules, watched):
        return control.Tracer(rules, watched)

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
    def make_tracer(self, rules, watched):
        t = control.MonitoringTracer.make(rules, watched)
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

if __name__ == "__main__":
    unittest.main()
