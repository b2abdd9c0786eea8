"""Tests of the real-code engine's Python pieces (replay/engine/python/rerace_real), without the C++
side: how a recorded tuner is rebuilt, what the tracking subclass reports, that the patched
class's methods and properties still apply through it, the controlled primitives outside a
replay, and that the fakes are the only parts of Triton replaced. The whole engine, driven by
rerace's scheduler, is tested in tests/replay/engine/python_engine_test.cc. The GIL tracer:
test_tracer.py; where recorded tuners come from: test_tuners.py; the controller's pieces:
test_control.py. (These tests assert on their own file name, test_engine.py.)"""

import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_fixtures import CALL, SKIP, autotuner, triton  # noqa: E402
from rerace_real import control, fakes, reach, sync, tuners  # noqa: E402


class Recorder:
    """Stands for control.RUN: collects the accesses instead of talking to a controller."""

    def __init__(self):
        self.accesses = []
        self.opportunities = 0

    def access(self, kind, obj, label):
        self.accesses.append((kind, obj, label))

    def opportunity(self):
        self.opportunities += 1

    def last_write_of(self, field):
        return ""



@unittest.skipIf(triton is None, SKIP)
class BuildTest(unittest.TestCase):

    def test_config_text_round_trips(self):
        c = tuners.parse_config(CALL["configs"][1], triton.Config)
        self.assertEqual(c.kwargs, {"BLOCK_N": 2048})
        self.assertEqual(c.num_warps, 2)
        self.assertEqual(str(c), CALL["configs"][1])

    def test_config_without_colon_is_refused(self):
        with self.assertRaises(ValueError):
            tuners.parse_config("BLOCK_N=3", triton.Config)

    def test_built_tuner_has_the_recorded_shape(self):
        t, positional = tuners.build(CALL, triton)
        self.assertIsInstance(t, autotuner.Autotuner)
        self.assertEqual(positional, ["x_ptr", "y_ptr", "N", "eps"])
        self.assertEqual(t.arg_names[0], tuners.KEY_ARG)
        self.assertEqual(t.keys, [tuners.KEY_ARG])
        self.assertEqual(t.restore_value, ["y_ptr"])
        self.assertEqual([str(c) for c in t.configs], CALL["configs"])


@unittest.skipIf(triton is None, SKIP)
class TrackingTest(unittest.TestCase):

    def setUp(self):
        self.rec = Recorder()
        control.RUN = self.rec

    def tearDown(self):
        control.RUN = None

    def test_reads_and_writes_of_fields_are_reported_with_the_source_line(self):
        t, _ = tuners.build(CALL, triton)
        tuners.track(t, "T")
        t.nargs = {"a": 1}
        _ = t.nargs
        kinds = [(k, o) for k, o, _ in self.rec.accesses]
        self.assertEqual(kinds, [("w", "T.nargs"), ("r", "T.nargs")])
        self.assertIn("test_engine.py", self.rec.accesses[0][2])

    def test_dicts_held_by_fields_report_their_own_accesses(self):
        t, _ = tuners.build(CALL, triton)
        tuners.track(t, "T")
        t.cache["k"] = 1          # read of the field, then a write of its dict
        self.assertIn("k", t.cache)
        self.assertEqual([(k, o) for k, o, _ in self.rec.accesses],
                         [("r", "T.cache"), ("w", "T.cache{}"), ("r", "T.cache"), ("r", "T.cache{}")])
        self.assertEqual({**t.cache}, {"k": 1})
        self.assertIs(type(t).__mro__[1], autotuner.Autotuner)
        self.assertEqual(type(t).__name__, "Autotuner")

    def test_patched_run_and_properties_still_apply(self):
        class Patched(autotuner.Autotuner):
            calls = 0

            def run(self, *a, **k):
                Patched.calls += 1
                return "patched"

            local = threading.local()
            nargs = property(lambda self: getattr(Patched.local, "v", None),
                             lambda self, v: setattr(Patched.local, "v", v))

        t, _ = tuners.build(CALL, triton)
        t.__class__ = Patched
        tuners.track(t, "T")
        self.assertEqual(t.run(), "patched")
        t.nargs = {"a": 1}
        self.assertEqual(Patched.local.v, {"a": 1})
        self.assertEqual(t.nargs, {"a": 1})

    def test_a_field_served_by_a_property_is_not_itself_a_shared_object(self):
        # A thread-local nargs (the tls fixes): reading or writing the property runs its code,
        # whose store is per thread; reporting `T.nargs` would order threads that share nothing
        # (and list races that are not there). A property over shared storage (an attribute of
        # the instance) stays a shared object, and what its code touches is reported too.
        class Patched(autotuner.Autotuner):
            local = threading.local()
            nargs = property(lambda self: getattr(Patched.local, "v", None),
                             lambda self, v: setattr(Patched.local, "v", v))
            restore_copies = property(lambda self: self.store,
                                      lambda self, v: setattr(self, "store", v))

        t, _ = tuners.build(CALL, triton)
        t.__class__ = Patched
        t.store = {"kept": 1}
        tuners.track(t, "T")
        self.assertEqual(t.store, {"kept": 1})      # the probe put the old value back
        self.rec.accesses.clear()
        t.nargs = {"a": 1}
        self.assertEqual(t.nargs, {"a": 1})
        self.assertIs(type(Patched.local.v), dict)  # not wrapped as a shared dict either
        self.assertEqual(self.rec.accesses, [])
        t.restore_copies = {"y": 2}
        self.assertEqual(t.restore_copies, {"y": 2})
        self.assertEqual([(k, o) for k, o, _ in self.rec.accesses],
                         [("w", "T.restore_copies"), ("w", "T.store"),
                          ("r", "T.restore_copies"), ("r", "T.store")])
        _ = t.cache
        self.assertEqual(self.rec.accesses[-1][:2], ("r", "T.cache"))

    def test_a_property_that_changes_nothing_stays_a_shared_object(self):
        # A no-op patch: nargs through a property onto the instance's own __dict__. Exempting
        # it would hide the stock nargs race from DPOR and certify a patch that fixes nothing.
        class Noop(autotuner.Autotuner):
            nargs = property(lambda self: self.__dict__.get("nargs"),
                             lambda self, v: self.__dict__.__setitem__("nargs", v))

        t, _ = tuners.build(CALL, triton)
        t.__class__ = Noop
        tuners.track(t, "T")
        self.rec.accesses.clear()
        t.nargs = {"a": 1}
        _ = t.nargs
        self.assertEqual([(k, o) for k, o, _ in self.rec.accesses], [("w", "T.nargs"), ("r", "T.nargs")])

    def test_a_read_only_property_stays_a_shared_object(self):
        class ReadOnly(autotuner.Autotuner):
            nargs = property(lambda self: None)

        t, _ = tuners.build(CALL, triton)
        t.__class__ = ReadOnly
        tuners.track(t, "T")
        self.rec.accesses.clear()
        _ = t.nargs
        self.assertEqual([(k, o) for k, o, _ in self.rec.accesses], [("r", "T.nargs")])

    def test_slots_hold_data_and_stay_watched(self):
        # A slot is a data descriptor that holds the instance's own data: not code.
        class Slotted:
            __slots__ = ("flag",)

        class Coded(Slotted):
            nargs = property(lambda self: None)

        class Plain(Coded):
            nargs = None    # a class attribute hides the property again

        self.assertEqual(tuners._code_attributes(Slotted), frozenset())
        self.assertEqual(tuners._code_attributes(Coded), frozenset(["nargs"]))
        self.assertEqual(tuners._code_attributes(Plain), frozenset())


class SyncTest(unittest.TestCase):
    """Outside a replay run the controlled primitives are the real ones."""

    def setUp(self):
        sync.set_watched(lambda f: f == __file__)

    def tearDown(self):
        sync.set_watched(lambda f: False)

    def test_watched_code_gets_controlled_objects_with_stable_names(self):
        a, b = sync.Lock(), sync.Lock()
        self.assertIsInstance(a, sync.Lock)
        self.assertRegex(a._name, r"^Lock@test_engine\.py:\d+#m\.\d+$")
        self.assertNotEqual(a._name, b._name)

    def test_unwatched_code_gets_real_objects(self):
        sync.set_watched(lambda f: False)
        self.assertNotIsInstance(sync.Lock(), sync.Lock)
        self.assertNotIsInstance(sync.Event(), sync.Event)

    def test_uncontrolled_semantics_are_threadings(self):
        lock = sync.Lock()
        self.assertTrue(lock.acquire())
        self.assertFalse(lock.acquire(blocking=False))
        lock.release()
        r = sync.RLock()
        with r:
            with r:
                pass
        ev = sync.Event()
        th = threading.Thread(target=ev.set)
        th.start()
        self.assertTrue(ev.wait(5))
        th.join()
        s = sync.BoundedSemaphore(1)
        s.acquire()
        s.release()
        with self.assertRaises(ValueError):
            s.release()


class FakeTensorTest(unittest.TestCase):

    def setUp(self):
        self.rec = Recorder()
        control.RUN = self.rec

    def tearDown(self):
        control.RUN = None

    def test_clone_and_copy_carry_whose_data(self):
        mine, other = fakes.FakeTensor(1, "y_ptr"), fakes.FakeTensor(2, "y_ptr")
        saved = mine.clone()
        mine.zero_()
        mine.copy_(saved)
        self.assertEqual(mine.value, ("data", 1, "y_ptr"))
        mine.copy_(other.clone())   # outside a logical thread: no finding, the value moves
        self.assertEqual(mine.value, ("data", 2, "y_ptr"))
        self.assertGreaterEqual(self.rec.opportunities, 4)


@unittest.skipIf(triton is None, SKIP)
class ReplacedPartsTest(unittest.TestCase):
    """The fakes replace the launch and the driver, and nothing else of Triton's."""

    def test_only_the_launch_and_the_driver_are_replaced(self):
        from triton.runtime import jit
        mods = [m for n, m in sorted(sys.modules.items()) if n.startswith("triton") and m]
        before = {(n, k): v for n, m in zip(sorted(x for x in sys.modules if x.startswith("triton")), mods)
                  for k, v in list(vars(m).items())}
        klass_before = dict(vars(jit.JITFunction))
        auto_before = dict(vars(autotuner.Autotuner))
        replaced = fakes.install(triton)
        self.assertEqual(replaced, ["triton.runtime.jit.JITFunction.run",
                                    "triton.runtime.driver.driver.active"])
        changed = [k for k, v in vars(jit.JITFunction).items() if klass_before.get(k) is not v]
        self.assertEqual(changed, ["run"])
        self.assertEqual(dict(vars(autotuner.Autotuner)), auto_before)
        after = {(n, k): v for n in sorted(x for x in sys.modules if x.startswith("triton"))
                 for k, v in list(vars(sys.modules[n]).items())}
        self.assertEqual([k for k in before if after.get(k) is not before[k]], [])



class ReachTest(unittest.TestCase):
    """Issue 29: which replaced callables a tuner call entered, and a bypass's frame chain.
    Plain classes stand for Autotuner (no Triton needed): the profile hook is what is tested."""

    def _run(self, reached, call):
        ts = control.ThreadState(0, "t0")
        c = {}
        reached.start_call(c)
        ts.call = c
        control._local.ts = ts
        sys.setprofile(lambda frame, event, arg: reached.profile(frame, event))
        try:
            call()
        finally:
            sys.setprofile(None)
            control._local.ts = None
        return reached.report(c)

    def test_a_wrapper_on_the_path_is_entered(self):
        class Tuner:
            def run(self):
                return 1
        before = dict(vars(Tuner))
        stock = Tuner.run

        def run(self):
            return stock(self)
        Tuner.run = run
        reached = reach.Reach()
        reached.note("Tuner", before, dict(vars(Tuner)))
        self.assertEqual([r["name"] for r in reached.info()], ["Tuner.run"])
        self.assertEqual(self._run(reached, lambda: Tuner().run()), {"entered": [0], "bypass": {}})

    def test_a_reference_taken_before_the_patch_bypasses_it(self):
        class Tuner:
            def run(self):
                return 1
        orig = Tuner.run

        class Sub(Tuner):
            def run(self):
                return orig(self)
        before = dict(vars(Tuner))

        def run(self):
            return orig(self)
        Tuner.run = run
        reached = reach.Reach()
        reached.note("Tuner", before, dict(vars(Tuner)))
        got = self._run(reached, lambda: Sub().run())
        self.assertEqual(got["entered"], [])
        self.assertRegex(got["bypass"]["0"],
                         r"^ReachTest\.test_a_reference_taken_before_the_patch_bypasses_it\."
                         r"<locals>\.Sub\.run \(test_engine\.py:\d+\) reached Tuner\.run "
                         r"\(test_engine\.py:\d+\) without it$")

    def test_an_added_property_counts_a_new_helper_does_not(self):
        before = {"run": lambda self: 1}
        after = dict(before, nargs=property(lambda self: None), helper=lambda self: 2)
        reached = reach.Reach()
        reached.note("Tuner", before, after)
        self.assertEqual([(r["name"], r["kind"], r["target"]) for r in reached.info()],
                         [("Tuner.nargs", "property",
                           "Tuner.nargs (an instance attribute before the patch)")])

    def test_a_reloaded_copy_of_stock_code_is_not_a_replacement(self):
        # A module reloaded after a patch (or before one that rebinds Autotuner) has fresh
        # function objects compiled from the same file, line and name: not a patch's code.
        src = "def run(self):\n    return 1\n"
        a, b, c = {}, {}, {}
        exec(compile(src, "/stock/autotuner.py", "exec"), a)
        exec(compile(src, "/stock/autotuner.py", "exec"), b)
        exec(compile(src, "/team/lock.py", "exec"), c)
        reached = reach.Reach()
        reached.note("Autotuner", {"run": a["run"]}, {"run": b["run"]})
        self.assertEqual(reached.info(), [])
        reached.note("Autotuner", {"run": a["run"]}, {"run": c["run"]})
        self.assertEqual([r["name"] for r in reached.info()], ["Autotuner.run"])

    def test_what_is_not_code_is_not_a_replacement(self):
        before = {"run": lambda self: 1, "x": 1}
        after = {"run": before["run"], "x": 2, "new": lambda self: 2, "run2": 3}
        reached = reach.Reach()
        reached.note("Tuner", before, after)
        self.assertEqual(reached.info(), [])

    def test_a_property_a_tuner_class_hides_is_bypassed(self):
        class Tuner:
            def run(self):
                return 1
        before = dict(vars(Tuner))
        Tuner.nargs = property(lambda self: None)
        Tuner.restore_copies = property(lambda self: {})

        def run(self):
            return 2
        Tuner.run = run

        class Team(Tuner):
            nargs = None        # hides the property: the calls use this one

            def run(self):      # overrides the patched run and never calls it
                return 3

        class Fine(Tuner):
            pass
        reached = reach.Reach()
        reached.note("Tuner", before, dict(vars(Tuner)), source="p.py")
        # A class put in Tuner's place inherits the same property: not a second replacement.
        reached.note("Tuner", before, {k: getattr(Team, k) for k in ("restore_copies",)})
        self.assertEqual([(r["name"], r["source"]) for r in reached.info()],
                         [("Tuner.nargs", "p.py"), ("Tuner.restore_copies", "p.py"),
                          ("Tuner.run", "p.py")])
        reached.check_class(Fine)
        self.assertEqual(self._run(reached, lambda: None), {"entered": [], "bypass": {}})
        reached.check_class(Team)
        got = self._run(reached, lambda: None)
        self.assertEqual(sorted(got["hidden"]), ["0", "2"])
        self.assertRegex(got["hidden"]["0"], r"^the replayed tuner's class ReachTest\.test_a_property_"
                         r"a_tuner_class_hides_is_bypassed\.<locals>\.Team resolves nargs to "
                         r"ReachTest\..*\.Team\.nargs, a plain attribute \(test_engine\.py\)$")
        self.assertRegex(got["hidden"]["2"], r"resolves run to .*Team\.run, .*Team\.run "
                         r"\(test_engine\.py:\d+\)$")
        # A tuner class without the patched class in its bases (a fresh copy of it) has none.
        other = reach.Reach()
        other.note("Tuner", before, dict(vars(Tuner)))
        other.check_class(type("Fresh", (), {}))
        self.assertEqual(sorted(self._run(other, lambda: None)["hidden"]), ["0", "1", "2"])
        self.assertRegex(self._run(other, lambda: None)["hidden"]["0"],
                         r"^the replayed tuner's class .*Fresh has no nargs \(not the class the "
                         r"patch changed\)$")

    def test_one_function_under_two_names_is_two_replacements(self):
        # A decorator's wrappers share one code object: each name is its own replacement.
        def locked(f):
            def wrapper(self, *a):
                return f(self, *a)
            return wrapper

        class Tuner:
            def run(self):
                return 1

            def bench(self):
                return 2
        before = dict(vars(Tuner))
        Tuner.run = locked(Tuner.run)
        Tuner.bench = locked(Tuner.bench)
        reached = reach.Reach()
        reached.note("Tuner", before, dict(vars(Tuner)))
        self.assertEqual([r["name"] for r in reached.info()], ["Tuner.bench", "Tuner.run"])

    def test_a_property_entered_through_its_setter_is_entered(self):
        class Tuner:
            pass
        before = dict(vars(Tuner))
        store = {}
        Tuner.nargs = property(lambda self: store.get("v"), lambda self, v: store.update(v=v))
        reached = reach.Reach()
        reached.note("Tuner", before, dict(vars(Tuner)))

        def call():
            Tuner().nargs = 1
        self.assertEqual(self._run(reached, call), {"entered": [0], "bypass": {}})

if __name__ == "__main__":
    unittest.main()


@unittest.skipIf(triton is None, SKIP)
class PatchDescriptionTest(unittest.TestCase):
    """What a patch changed, as the engine says it (issue 49, item 5)."""

    def test_a_functools_wraps_wrapper_is_named_by_its_own_code(self):
        import functools
        from rerace_real import engine_setup

        def stock(self):
            return 1

        @functools.wraps(stock)
        def wrapper(self):
            return stock(self)

        text = engine_setup._describe(wrapper)
        line = wrapper.__code__.co_firstlineno
        self.assertIn("(test_engine.py:%d), a wrapper of " % line, text)
        self.assertIn("stock", text)

    def test_a_patch_of_a_recorded_subclass_is_a_change_and_a_replacement(self):
        import tempfile
        from rerace_real import engine_setup

        class CachedTuner(autotuner.Autotuner):
            def run(self, *args, **kwargs):
                return super().run(*args, **kwargs)

        sys.modules[__name__].CachedTuner = CachedTuner
        setup = engine_setup.Setup.__new__(engine_setup.Setup)
        setup.autotuner = autotuner
        setup.tuner_classes = {__name__ + ".CachedTuner": CachedTuner}
        setup.reach = reach.Reach()
        setup.patch_modules = []
        with tempfile.NamedTemporaryFile("w", suffix="_fla_patch.py", delete=False) as f:
            f.write("import sys\n"
                    "C = sys.modules[%r].CachedTuner\n" % __name__ +
                    "stock = C.run\n"
                    "def run(self, *a, **k):\n"
                    "    return stock(self, *a, **k)\n"
                    "C.run = run\n")
        try:
            before = engine_setup._class_attrs(autotuner.Autotuner)
            out = setup._import_patch(0, f.name, before)
        finally:
            os.unlink(f.name)
            del sys.modules[__name__].CachedTuner
        self.assertEqual(len(out["changed"]), 1, out["changed"])
        self.assertTrue(out["changed"][0].startswith("CachedTuner.run -> function run ("),
                        out["changed"])
        self.assertEqual([r["name"] for r in setup.reach.info()], ["CachedTuner.run"])
