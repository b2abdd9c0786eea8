"""The controller side's pieces of the engine's Python process (replay/engine/python/
rerace_real/control.py, fakes.py): the channel's batched messages, the step a write is
cited at, places spelled from their package, a program's exception frame, and rerace's
own bookkeeping unseen by the tracer."""

import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_fixtures import autotuner, triton  # noqa: E402
from rerace_real import control, fakes, sync, tuners  # noqa: E402


class CitedStepTest(unittest.TestCase):
    """Issue 28 (5): the words cite a write at the step the timeline shows it; a write the GIL
    merged into the step of an earlier access of its thread is not shown there on its own, and
    is cited as part of that step."""

    def run_with(self, writes):
        run = control.Run(-1, -1, False, None)
        run.last_write.update(writes)
        return run

    def test_a_write_at_its_own_point_is_at_its_step(self):
        run = self.run_with({"Autotuner(k).nargs": (3, 17, False), "Autotuner(k).cache": (5, 30, False)})
        self.assertEqual(run.last_writer("nargs"), (3, 17, "at step 17"))
        self.assertEqual(run.last_write_of("nargs"), " (nargs last written by thread 3 at step 17)")

    def test_a_merged_write_is_cited_in_the_step_it_joined(self):
        run = self.run_with({"Autotuner(k).restore_copies": (2, 40, False),
                             "Autotuner(k).restore_copies{}": (6, 51, True)})
        tid, step, at = run.last_writer("restore_copies")
        self.assertEqual((tid, step), (6, 51))
        self.assertTrue(at.startswith("in step 51 (after the access the timeline shows there"), at)
        self.assertIn("thread 6 in step 51 (", run.last_write_of("restore_copies"))

    def test_no_write_is_no_writer(self):
        self.assertEqual(self.run_with({}).last_writer("nargs"), (-1, -1, "at step -1"))
        self.assertEqual(self.run_with({}).last_write_of("nargs"), "")


class ChannelTest(unittest.TestCase):
    """Issue 26: the messages the controller does not answer are written with the next one it
    answers, in the order they were made, in one write; the tracer's opcode names are dis's."""

    def setUp(self):
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self.run = control.Run(-1, self.w, False, None)
        control.set_token("tok")

    def tearDown(self):
        control.set_token("")
        os.close(self.r)
        os.close(self.w)

    def written(self):
        try:
            return os.read(self.r, 65536).decode()
        except BlockingIOError:
            return ""

    def test_posted_messages_go_with_the_next_answered_one_in_order(self):
        self.run.post("m", "r", "Autotuner(k).nargs", "autotuner.py:1 run: read\tself.nargs")
        self.run.post("v", 1500)
        self.run.post("f", '{"code": "x"}')
        self.assertEqual(self.written(), "")  # nothing until a message the controller answers
        self.run.send("p", "w", "Autotuner(k).cache", "autotuner.py:2\nrun")
        self.assertEqual(self.written(),
                         "tok m\tr\tAutotuner(k).nargs\tautotuner.py:1 run: read self.nargs\n"
                         "tok v\t1500\n"
                         'tok f\t{"code": "x"}\n'
                         "tok p\tw\tAutotuner(k).cache\tautotuner.py:2 run\n")

    def test_flush_writes_what_is_pending_and_many_posts_do_not_wait(self):
        self.run.post("v", 1)
        self.run.flush()
        self.assertEqual(self.written(), "tok v\t1\n")
        self.run.flush()
        self.assertEqual(self.written(), "")
        for i in range(control._POST_LIMIT):
            self.run.post("v", i)
        self.assertEqual(self.written().count("\n"), control._POST_LIMIT)

    def test_opcode_names_are_diss_under_a_tracer_too(self):
        import dis
        import types
        seen = []

        def check(code):
            self.assertEqual(control.opnames_of(code),
                             {i.offset: i.opname for i in dis.get_instructions(code)}, code)
            seen.append(code)
            for k in code.co_consts:
                if isinstance(k, types.CodeType):
                    check(k)

        modules = [control, tuners, sync, dis, threading] + ([autotuner] if triton else [])
        for m in modules:
            with open(m.__file__) as f:
                check(compile(f.read(), m.__file__, "exec"))

        def traced(frame, event, arg):
            frame.f_trace_opcodes = True
            if event == "opcode":  # instrumented now (3.12: sys.monitoring): the same names
                check(frame.f_code)
            return traced

        def loop(x):
            for i in range(3):
                x = len([x]) + i
            return x

        sys.settrace(traced)
        try:
            loop(1)
        finally:
            sys.settrace(None)
        self.assertGreater(len(seen), 100)


class SitePathTest(unittest.TestCase):
    """Issue 28 (6): one place is spelled one way, wherever its package is installed."""

    def test_places_are_spelled_from_their_package(self):
        cases = [
            ("/v/lib/python3.11/site-packages/triton/runtime/autotuner.py", "triton/runtime/autotuner.py"),
            ("/work/build/py/triton-3.4.0/triton/runtime/autotuner.py", "triton/runtime/autotuner.py"),
            ("/work/build/py/fla-core-0.6.0/fla/ops/utils.py", "fla/ops/utils.py"),
            ("triton/runtime/autotuner.py", "triton/runtime/autotuner.py"),
            ("/home/me/my_lock.py", "my_lock.py"),
        ]
        for path, want in cases:
            self.assertEqual(control.site_path(path), want, path)



class ProgramFrameTest(unittest.TestCase):
    """Issue 26: where a program's exception is reported comes from the traceback itself, not
    from traceback.extract_tb (which stats and reads every source file): the same file, line
    and function as extract_tb's innermost frame outside rerace's own code."""

    def raised(self, source, name):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "prog_%s.py" % name)
            with open(path, "w") as f:
                f.write(source)
            ns = {}
            exec(compile(source, path, "exec"), ns)
            try:
                ns["outer"]()
            except Exception as e:  # noqa: BLE001
                return e
        self.fail("no exception")

    def expected(self, tb):
        import traceback
        for fr in reversed(traceback.extract_tb(tb)):
            if not control.is_ours(fr.filename):
                return fr.filename, fr.lineno, fr.name
        return None

    def test_the_same_frame_as_extract_tb(self):
        from rerace_real import serve
        cases = {
            "key": "def inner(d):\n    return d['y_ptr']\n\ndef outer():\n    return inner({})\n",
            "multiline": ("def inner(d, k):\n    return (\n        d[\n            k\n        ]\n"
                          "    )\n\ndef outer():\n    x = 1\n    return inner(\n        {},\n"
                          "        'k' + str(x),\n    )\n"),
            "method": ("class A:\n    def f(self):\n        raise TypeError('NoneType')\n\n"
                       "def outer():\n    A().f()\n"),
            "handler": ("def outer():\n    try:\n        {}['a']\n    except KeyError:\n"
                        "        pass\n    None.x\n"),
        }
        for name, source in cases.items():
            e = self.raised(source, name)
            got = serve._program_frame(e.__traceback__)
            self.assertIsNotNone(got, name)
            self.assertEqual(got, self.expected(e.__traceback__), name)
            self.assertEqual(got[2], "inner" if name in ("key", "multiline") else
                             "f" if name == "method" else "outer", name)

    def test_only_reraces_own_frames_is_none(self):
        from rerace_real import serve
        try:
            control.Run(-1, -1, False, None)._command()  # reads fd -1: raises in control.py
        except Exception as e:  # noqa: BLE001
            tb = e.__traceback__.tb_next  # from control.py on: the test's own frame left out
            self.assertIsNone(serve._program_frame(tb))
            self.assertIsNone(self.expected(tb))
            self.assertIsNotNone(serve._program_frame(e.__traceback__))
            return
        self.fail("no exception")


class ConfigIndexUnseenTest(unittest.TestCase):
    """Issue 26: the launch fake finds the config a launch ran by calling each config's
    all_kwargs, which the program does not do there: rerace's own bookkeeping, unseen by the
    GIL tracer (no execution counted, no hand-over place, no patch reach) and no access."""

    def test_all_kwargs_runs_unseen(self):
        seen = []

        class Config:
            def __init__(self, kw):
                self.kw = kw

            def all_kwargs(self):
                ts = control.current()
                seen.append((ts.quiet, ts.traced))
                return self.kw

        class Tuner:
            configs = [Config({"BLOCK": 16}), Config({"BLOCK": 32})]

        ts = control.ThreadState(0, "t0")
        control._local.ts = ts
        try:
            self.assertEqual(fakes._config_index(Tuner(), {"BLOCK": 32, "x": 1}), 1)
            self.assertEqual(fakes._config_index(Tuner(), {"BLOCK": 64}), -1)
            self.assertEqual((ts.quiet, ts.traced), (0, True))  # as before, after
        finally:
            control._local.ts = None
        self.assertEqual(seen, [(1, False)] * 4)

if __name__ == "__main__":
    unittest.main()
