"""Where the engine's tuners come from (replay/engine/python/rerace_real/tuners.py and
serve.py): the recorded kernels, keys and classes resolve only to installed places, the
set-up fills each child's caches, and a class that is not installed is refused with why."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_fixtures import CALL, ENGINE_DIR, SKIP, autotuner, triton  # noqa: E402
from rerace_real import control, tuners  # noqa: E402


@unittest.skipIf(triton is None, SKIP)
class WhereTunersComeFromTest(unittest.TestCase):
    """A recording that names an importable kernel replays that kernel's real tuner object (its
    configs, key, hooks); otherwise the tuner is built from the recording."""

    def test_importable_kernel_is_the_real_object(self):
        import json
        import subprocess
        import tempfile
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "rr_test_kernels.py"), "w") as f:
            f.write("import triton\nimport triton.language as tl\n"
                    "@triton.autotune(configs=[triton.Config({'BLOCK': 16}), triton.Config({'BLOCK': 32})],"
                    " key=['N'], restore_value=['y_ptr'])\n"
                    "@triton.jit\n"
                    "def kern(x_ptr, y_ptr, N, BLOCK: tl.constexpr):\n    pass\n")
        call = dict(CALL, tuner=7, kernel="kern", key="(64, 'torch.float32', 'torch.float32')",
                    configs=["BLOCK: 1, num_warps: 4, num_ctas: 1, num_stages: 3, maxnreg: None"],
                    arg_names=["x_ptr", "y_ptr", "N", "BLOCK"], bench_ns=[5], bench_reps=[1])
        meta = {"kernel": {"module": "rr_test_kernels", "qualname": "kern"}, "keys": ["N"]}
        cfg = {"program": {"threads": [], "calls": [call], "tuner_meta": {"7": meta}}, "patches": [],
               "user_pythonpath": [d]}
        script = ("import json, sys\nfrom rerace_real import serve\n"
                  "s = serve.Setup(json.loads(sys.argv[1]))\ns.start()\n"
                  "import rr_test_kernels\nt = s.tuners[7][0]\n"
                  "print(json.dumps({'same': t is rr_test_kernels.kern, 'tuners': s.info['tuners'],"
                  " 'configs': len(t.configs), 'positional': s.tuners[7][1]}))\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [d, ENGINE_DIR] + sys.path))
        out = subprocess.run([sys.executable, "-c", script, json.dumps(cfg)], env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertTrue(got["same"])
        self.assertEqual(got["configs"], 2)          # the module's configs, not the recording's
        self.assertEqual(got["positional"], ["x_ptr", "y_ptr", "N"])
        self.assertEqual(got["tuners"], ["kern: imported rr_test_kernels.kern"])

    @unittest.skipIf(SKIP, SKIP)
    def test_set_up_fills_the_caches_each_child_would_fill(self):
        """Issue 26: Setup.start fills the file and opcode caches once, so that a run's child
        (a fork) starts with them: the tuner's module and a patch-free run's code are there,
        with the answers a fresh lookup gives."""
        import json
        import subprocess
        cfg = {"program": {"threads": [], "calls": [CALL], "tuner_meta": {}}, "patches": [],
               "mode": "gil"}
        script = (
            "import json, os, sys\nfrom rerace_real import serve, control\n"
            "s = serve.Setup(json.loads(sys.argv[1]))\ns.start()\n"
            "from triton.runtime import autotuner as a\n"
            "f = a.__file__\nrun = a.Autotuner.run.__code__\nt = s.tracer\n"
            "cached = {'ours': control._ours_cache.get(f), 'ours_self': control._ours_cache.get(serve.__file__),"
            " 'watched': t._watch_cache.get(f) if t else None,"
            " 'ops': t.opnames.get(id(run), (None, None))[1] if t else None}\n"
            "control._ours_cache.clear()\n"
            "fresh = {'ours': control.is_ours(f), 'ours_self': control.is_ours(serve.__file__),"
            " 'watched': bool(s.watched(f)), 'ops': control.opnames_of(run)}\n"
            "print(json.dumps({'cached': cached, 'fresh': fresh, 'tracer': t is not None}))\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ENGINE_DIR] + sys.path))
        out = subprocess.run([sys.executable, "-c", script, json.dumps(cfg)], env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertTrue(got["tracer"])
        self.assertEqual(got["cached"], got["fresh"])
        self.assertIs(got["cached"]["ours"], False)
        self.assertIs(got["cached"]["ours_self"], True)
        self.assertIs(got["cached"]["watched"], True)
        self.assertIn("RESUME", got["cached"]["ops"].values())

    def test_recorded_names_resolve_only_to_installed_places(self):
        """trust.check: a name from a recording is importable only from site-packages or the
        user's PYTHONPATH; never the standard library, a built-in, or a folder not named."""
        import tempfile
        from rerace_real import trust
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "rr_trust_mod.py"), "w") as f:
            f.write("raise SystemExit('imported')\n")
        sys.path.insert(0, d)  # findable, but not a folder the user named
        try:
            folders = trust.roots([])
            path, why = trust.check("rr_trust_mod", folders)
            self.assertIsNone(path)
            self.assertIn("outside the installed packages", why)
            path, why = trust.check("rr_trust_mod", trust.roots([d]))
            self.assertEqual(path, os.path.join(d, "rr_trust_mod.py"))
            self.assertEqual(why, "")
        finally:
            sys.path.remove(d)
        for name in ("os", "this", "antigravity", "sys", "json.decoder"):
            path, why = trust.check(name, folders)
            self.assertIsNone(path, name)
            self.assertIn("standard library", why)
        for name in ("", "a..b", "os; import x", "../x", 7):
            self.assertIsNone(trust.check(name, folders)[0], name)
        self.assertEqual(trust.check("triton", folders)[1], "")  # installed: site-packages
        self.assertTrue(trust.check("rerace_real.fixes.lock_run", folders)[0].endswith("lock_run.py"))
        self.assertIsNone(trust.check("rerace_real.serve", folders)[0])

    def test_key_values_come_from_the_recorded_key(self):
        self.assertEqual(tuners.key_values(["N"], ["x", "N"], "(1024, 'torch.float32')"), {"N": 1024})
        self.assertIsNone(tuners.key_values(["N"], ["x", "N"], "not a tuple"))


class TunerClassTest(unittest.TestCase):
    """Issue 29 (2) and (1): a recorded tuner class is imported when installed, refused in one
    line otherwise; FLA's cache.py alone, with the fake torch, when this Python has no torch."""

    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="rerace-tuner-class-")
        with open(os.path.join(self.dir, "rerace_test_team.py"), "w") as f:
            f.write("from triton.runtime.autotuner import Autotuner\n"
                    "class Team(Autotuner):\n    pass\n"
                    "class NotATuner:\n    pass\n")
        sys.path.insert(0, self.dir)
        self.folders = [os.path.realpath(self.dir)]

    def tearDown(self):
        sys.path.remove(self.dir)
        sys.modules.pop("rerace_test_team", None)

    def test_an_installed_subclass_is_its_real_class(self):
        cls, why = tuners.tuner_class("rerace_test_team.Team", None, autotuner.Autotuner, self.folders)
        self.assertEqual(why, "")
        self.assertEqual(cls.__qualname__, "Team")
        self.assertTrue(issubclass(cls, autotuner.Autotuner))

    def test_what_is_not_installed_or_not_a_tuner_is_refused_with_why(self):
        cases = [
            ("rerace_no_such_module.Tuner", "rerace_no_such_module is not installed here"),
            ("rerace_test_team.NotATuner", "is not a subclass of Triton's Autotuner"),
            ("os.path.Tuner", "in the standard library"),
        ]
        for name, why in cases:
            cls, got = tuners.tuner_class(name, None, autotuner.Autotuner, self.folders)
            self.assertIsNone(cls, name)
            self.assertIn(why, got, name)
            self.assertNotIn("\n", got, name)

    def test_a_module_whose_package_lacks_a_dependency_imports_alone(self):
        # With torch installed but not einops, FLA's package __init__ fails while cache.py alone
        # imports: the module is imported alone, its parents bare, and the engine says why.
        pkg = os.path.join(self.dir, "rerace_dep_pkg")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w") as f:
            f.write("import rerace_no_such_dependency\n")
        with open(os.path.join(pkg, "tuner.py"), "w") as f:
            f.write("from triton.runtime.autotuner import Autotuner\nclass Sub(Autotuner):\n    pass\n")
        with open(os.path.join(pkg, "needs.py"), "w") as f:
            f.write("import rerace_no_such_dependency\n")
        try:
            cls, why = tuners.tuner_class("rerace_dep_pkg.tuner.Sub", None, autotuner.Autotuner,
                                          self.folders)
            self.assertEqual(why, "")
            self.assertTrue(issubclass(cls, autotuner.Autotuner))
            self.assertIn(["rerace_dep_pkg.tuner", "rerace_no_such_dependency"], tuners.ALONE)
            self.assertTrue(getattr(sys.modules["rerace_dep_pkg"], "__rerace_bare__", False))
            # The module itself needs it: refused in one line naming it.
            cls, why = tuners.tuner_class("rerace_dep_pkg.needs.X", None, autotuner.Autotuner,
                                          self.folders)
            self.assertIsNone(cls)
            self.assertIn("No module named 'rerace_no_such_dependency'", why)
            # A missing top-level module is not installed, not imported alone.
            cls, why = tuners.tuner_class("rerace_no_such_pkg.tuner.Sub", None, autotuner.Autotuner,
                                          self.folders)
            self.assertIsNone(cls)
        finally:
            for k in [k for k in sys.modules if k.startswith("rerace_dep_pkg")]:
                del sys.modules[k]
            tuners.ALONE[:] = [a for a in tuners.ALONE if not a[0].startswith("rerace_dep_pkg")]
            tuners.FAKE_TORCH[:] = [m for m in tuners.FAKE_TORCH if not m.startswith("rerace_dep_pkg")]

    def test_fla_cache_imports_alone_with_the_fake_torch(self):
        root = os.environ.get("RERACE_PY_ROOT", os.path.join(os.path.dirname(__file__), "..", "..",
                                                              "build", "py"))
        fla = os.path.join(root, "fla-core-0.5.2")
        if not os.path.isdir(os.path.join(fla, "fla")):
            self.skipTest("%s is missing (tools/scripts/python-envs.sh makes it)" % fla)
        import importlib.util
        if importlib.util.find_spec("torch") is not None:
            self.skipTest("torch is installed: FLA imports as usual")
        if importlib.util.find_spec("packaging") is None:
            self.skipTest("packaging (which FLA's cache.py imports) is not installed here")
        saved = {k: v for k, v in sys.modules.items() if k == "fla" or k.startswith("fla.")}
        try:
            m = tuners.import_alone("fla.ops.utils.cache", os.path.join(fla, "fla", "__init__.py"))
            self.assertTrue(issubclass(m.CachedAutotuner, autotuner.Autotuner))
            self.assertTrue(m.torch.RERACE_FAKE)
            self.assertNotIn("torch", sys.modules)  # only while it imported
            self.assertTrue(getattr(sys.modules["fla.ops"], "__rerace_bare__", False))
            with self.assertRaises(ImportError):
                tuners.import_alone("fla.ops.no_such", os.path.join(fla, "fla", "__init__.py"))
        finally:
            for k in [k for k in sys.modules if k == "fla" or k.startswith("fla.")]:
                del sys.modules[k]
            sys.modules.update(saved)

if __name__ == "__main__":
    unittest.main()
