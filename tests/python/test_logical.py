"""Thread identity for logical threads that are greenlets (replay/engine/python/rerace_real/logical.py):
``local`` keeps one dict per logical thread and per OS thread, runs a subclass's ``__init__``
once per thread, and looks attributes up as ``object`` does; ``get_ident`` and
``current_thread`` answer for the logical thread running. Tested without installing them in
``threading`` (the engine does that in its own process) and without greenlets: the logical
thread running is the one ``control._local.ts`` names, as the engine sets it at each switch."""

import os
import sys
import threading
import unittest

ENGINE_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "replay", "engine", "python"))
sys.path.insert(0, ENGINE_DIR)
from rerace_real import control, logical  # noqa: E402


class Logical:
    """Stands for a logical thread's control.ThreadState (what logical.py reads of it)."""

    def __init__(self, tid, name):
        self.tid = tid
        self.name = name
        self.thread = None
        self.traced = True


class LogicalTest(unittest.TestCase):
    def setUp(self):
        self.a = Logical(0, "worker-a")
        self.b = Logical(1, "worker-b")
        control._local.ts = None

    def tearDown(self):
        control._local.ts = None

    def run_as(self, ts, fn):
        control._local.ts = ts
        try:
            return fn()
        finally:
            control._local.ts = None

    def test_each_logical_thread_has_its_own_dict(self):
        loc = logical.local()
        self.run_as(self.a, lambda: setattr(loc, "x", 1))
        self.assertFalse(self.run_as(self.b, lambda: hasattr(loc, "x")))
        self.run_as(self.b, lambda: setattr(loc, "x", 2))
        self.assertEqual(self.run_as(self.a, lambda: loc.x), 1)
        self.assertEqual(self.run_as(self.b, lambda: loc.x), 2)
        self.assertFalse(hasattr(loc, "x"))  # the OS thread's own (no logical thread running)
        self.run_as(self.a, lambda: delattr(loc, "x"))
        self.assertFalse(self.run_as(self.a, lambda: hasattr(loc, "x")))
        self.assertEqual(self.run_as(self.b, lambda: loc.x), 2)
        with self.assertRaises(AttributeError):
            self.run_as(self.a, lambda: delattr(loc, "x"))
        self.assertEqual(self.run_as(self.b, lambda: loc.__dict__), {"x": 2})
        with self.assertRaises(AttributeError):
            loc.__dict__ = {}

    def test_init_runs_once_per_thread_with_the_creation_arguments(self):
        calls = []

        class State(logical.local):
            def __init__(self, start):
                calls.append((getattr(control._local, "ts", None), start))
                self.count = start

        s = self.run_as(self.a, lambda: State(5))  # made in a: a's dict is filled at once
        self.assertEqual(calls, [(self.a, 5)])
        self.run_as(self.a, lambda: setattr(s, "count", s.count + 1))
        self.assertEqual(self.run_as(self.b, lambda: s.count), 5)
        self.assertEqual(calls, [(self.a, 5), (self.b, 5)])
        self.assertEqual(self.run_as(self.a, lambda: s.count), 6)
        self.assertEqual(self.run_as(self.b, lambda: s.count), 5)
        self.assertEqual(len(calls), 2)
        with self.assertRaises(TypeError):
            logical.local(1)

    def test_attributes_are_looked_up_as_object_does(self):
        class State(logical.local):
            default = "class"

            @property
            def doubled(self):
                return self.value * 2

            @property
            def guarded(self):
                return self.__dict__.get("_guarded", "unset")

            @guarded.setter
            def guarded(self, v):
                self.__dict__["_guarded"] = v

            def __getattr__(self, name):
                return "missing " + name

            def read(self):
                return self.value

        s = State()
        self.run_as(self.a, lambda: setattr(s, "value", 3))
        self.run_as(self.b, lambda: setattr(s, "value", 4))
        self.assertEqual(self.run_as(self.a, lambda: s.doubled), 6)
        self.assertEqual(self.run_as(self.b, lambda: s.doubled), 8)
        self.assertEqual(self.run_as(self.b, lambda: s.read()), 4)
        self.assertEqual(self.run_as(self.a, lambda: s.default), "class")
        self.run_as(self.a, lambda: setattr(s, "default", "mine"))
        self.assertEqual(self.run_as(self.a, lambda: s.default), "mine")
        self.assertEqual(self.run_as(self.b, lambda: s.default), "class")
        self.run_as(self.a, lambda: setattr(s, "guarded", "a's"))  # a data descriptor's setter
        self.assertEqual(self.run_as(self.a, lambda: s.guarded), "a's")
        self.assertEqual(self.run_as(self.b, lambda: s.guarded), "unset")
        self.assertEqual(self.run_as(self.a, lambda: s.nothing), "missing nothing")
        with self.assertRaises(AttributeError):
            self.run_as(self.a, lambda: logical.local().nothing)

    def test_os_threads_and_the_prewarm_keep_real_per_thread_storage(self):
        loc = logical.local()
        loc.x = "main"
        seen = []
        t = threading.Thread(target=lambda: seen.append(getattr(loc, "x", None)))
        t.start()
        t.join()
        self.assertEqual(seen, [None])
        prewarm = Logical(-1, "prewarm")  # the serial prewarm runs as the child's main thread
        self.assertEqual(self.run_as(prewarm, lambda: loc.x), "main")

    def test_identity_follows_the_logical_thread(self):
        real = threading.get_ident()
        self.assertEqual(logical.get_ident(), real)
        ia = self.run_as(self.a, logical.get_ident)
        ib = self.run_as(self.b, logical.get_ident)
        self.assertNotEqual(ia, ib)
        self.assertNotEqual(ia, real)
        self.assertNotEqual(self.run_as(self.a, logical.get_native_id),
                            self.run_as(self.b, logical.get_native_id))
        # threading's own current_thread finds a registered logical thread by its ident.
        logical.register(self.a)
        try:
            t = threading._active[ia]
            self.assertEqual(t.name, "worker-a")
            self.assertEqual(t.ident, ia)
            self.assertTrue(t.is_alive())
            self.assertIn(t, threading.enumerate())
        finally:
            logical.unregister(self.a)
        self.assertNotIn(ia, threading._active)
        self.assertFalse(t.is_alive())

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork")
    def test_a_thread_made_before_a_fork_is_alive_in_the_child(self):
        # Set-up makes each logical thread's Thread once and every run's child is a fork of it:
        # threading's after-fork handler must not stop it there.
        logical.make_thread(self.a)
        self.assertTrue(self.a.thread.is_alive())
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                logical.register(self.a)
                os.write(w, b"%d%d" % (self.a.thread.is_alive(), self.a.thread in threading.enumerate()))
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 8)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"11")

    def test_get_ident_is_told_to_the_tracer_as_the_c_call_it_stands_for(self):
        calls = []

        class Tracer:
            def c_returned(self, ts, code, offset, func, line):
                calls.append((ts, code.co_name, func))

        class Run:
            tracer = Tracer()

        saved = control.RUN
        control.RUN = Run()
        self.a.traced = True

        def caller():
            return logical.get_ident()
        try:
            self.run_as(self.a, caller)
            self.a.traced = False  # rerace's own bookkeeping, or the thread's task ended
            self.run_as(self.a, caller)
            logical.get_ident()  # not a logical thread: the real call, nothing to tell
        finally:
            control.RUN = saved
        self.assertEqual(calls, [(self.a, "caller", logical._real_get_ident)])

    def test_init_that_raises_runs_again_at_the_next_touch(self):
        tries = []

        class Flaky(logical.local):
            def __init__(self):
                tries.append(1)
                if len(tries) == 2:
                    raise ValueError("first time in this thread")
                self.x = len(tries)

        f = Flaky()
        with self.assertRaises(ValueError):
            self.run_as(self.a, lambda: f.x)
        self.assertEqual(self.run_as(self.a, lambda: f.x), 3)

    def test_getattr_hook_once_errors_and_copies_as_threading_local(self):
        misses = []

        class Hooked(logical.local):
            def __getattr__(self, name):
                misses.append(name)
                raise AttributeError(name)

        h = Hooked()
        with self.assertRaises(AttributeError):
            h.nothing
        self.assertEqual(misses, ["nothing"])  # once, as Python calls it for _thread._local
        with self.assertRaises(AttributeError) as e:
            del logical.local().missing
        self.assertEqual(str(e.exception), "'local' object has no attribute 'missing'")
        import copy
        import pickle
        with self.assertRaises(TypeError):
            copy.copy(logical.local())
        with self.assertRaises(TypeError):
            pickle.dumps(logical.local())


if __name__ == "__main__":
    unittest.main()
