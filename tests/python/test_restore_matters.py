"""CPU tests of tools/experiments/restore_matters.py (issue 31, item 1): its arguments,
the float64 reference and the classification of a thread's result on synthetic data, and the
loading of a release's autotuner.py over the installed Triton (where Triton imports). The trials
themselves need torch and a CUDA device: skipped here with the reason.

Run: build/py/venv/bin/python -m unittest tests/python/test_restore_matters.py
"""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "experiments"))

import restore_matters as rm  # noqa: E402


def _has(module):
    try:
        __import__(module)
        return True
    except Exception:
        return False


def _cuda():
    if not _has("torch"):
        return False
    import torch

    return torch.cuda.is_available()


def _parse_exit(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rm.parse_args(argv)
        except SystemExit as e:
            return e.code, err.getvalue()
    return None, err.getvalue()


class Arguments(unittest.TestCase):
    def test_defaults(self):
        a = rm.parse_args([])
        self.assertEqual((a.release, a.fix, a.threads, a.trials, a.fla), ("3.6", "none", 8, 8, False))

    def test_each_release_and_fix_is_accepted(self):
        for release in ("3.6", "3.8", "3.9"):
            for fix in rm.FIXES:
                with self.subTest(release=release, fix=fix):
                    a = rm.parse_args(["--release", release, "--fix", fix, "--fla"])
                    self.assertEqual((a.release, a.fix, a.fla), (release, fix, True))

    def test_usage_errors_exit_64(self):
        cases = [
            (["--release", "3.7"], "invalid choice"),
            (["--fix", "lock-everything"], "invalid choice"),
            (["--threads", "0"], "--threads"),
            (["--trials", "0"], "--trials"),
            (["--configs", "13"], "--configs"),
            (["--release", "3.6", "--autotuner-src", "x.py"], "--autotuner-src"),
        ]
        for argv, said in cases:
            with self.subTest(argv=argv):
                code, err = _parse_exit(argv)
                self.assertEqual(code, 64)
                self.assertIn(said, err)

    def test_named_fixes_are_the_patch_files(self):
        for fix, stem in [("lock-run", "lock_run.py"), ("tls-nargs", "tls_nargs.py"),
                          ("tls-state", "tls_state.py"), ("lock-key-event", "lock_key_event.py")]:
            with self.subTest(fix=fix):
                files = rm.patch_files(rm.parse_args(["--fix", fix, "--patch", "/tmp/mine.py"]))
                self.assertEqual([os.path.basename(f) for f in files], [stem, "mine.py"])
                self.assertTrue(os.path.isfile(files[0]))
        for fix in ("none", "prewarm"):
            self.assertEqual(rm.patch_files(rm.parse_args(["--fix", fix])), [])

    def test_autotuner_source_order_and_error(self):
        with tempfile.TemporaryDirectory() as d:
            carried = os.path.join(d, ".devsrc", "triton-3.8.0", "triton", "runtime", "autotuner.py")
            os.makedirs(os.path.dirname(carried))
            open(carried, "w").close()
            self.assertEqual(rm.autotuner_source("3.8", env={}, repo=d), carried)
            mine = os.path.join(d, "mine.py")
            open(mine, "w").close()
            self.assertEqual(rm.autotuner_source("3.8", explicit=mine, env={}, repo=d), mine)
            self.assertEqual(rm.autotuner_source("3.8", env={"RERACE_TRITON_SRC": mine}, repo=d), mine)
            with self.assertRaises(SystemExit) as cm:
                rm.autotuner_source("3.9", env={}, repo=d)
            self.assertIn("no autotuner.py of Triton 3.9.0", str(cm.exception.code))
            self.assertIn("--prepare", str(cm.exception.code))


class Reference(unittest.TestCase):
    def test_float64_reference(self):
        self.assertEqual(rm.reference([0.5, 1.5], [2.0, 0.25], [1000.0, -3.0]), [1001.0, -2.625])

    def test_inputs_are_reproducible_and_offset_per_thread(self):
        a = rm.make_inputs(16, 3, seed=7)
        self.assertEqual(a, rm.make_inputs(16, 3, seed=7))
        for i, (x, w, y0) in enumerate(a):
            self.assertTrue(all(0.5 <= v < 1.5 for v in x + w))
            self.assertTrue(all(rm.OFFSET * (i + 1) <= v < rm.OFFSET * (i + 1) + 1 for v in y0))


class Classification(unittest.TestCase):
    """Thread 1's result in each way a restore can go; float32 rounding stays ok."""

    def setUp(self):
        self.inputs = rm.make_inputs(64, 3, seed=1)
        self.xws = [[p * q for p, q in zip(x, w)] for x, w, _ in self.inputs]
        self.y0s = [y0 for _, _, y0 in self.inputs]

    def y(self, base, k, i=1):
        return [b + k * p for b, p in zip(self.y0s[base], self.xws[i])]

    def f32_sums(self, base, i, k, f32):
        """y0_base + x_i w_i added k times, each addition rounded to float32 (as the GPU does)."""
        y = [f32(v) for v in self.y0s[base]]
        for _ in range(k):
            y = [f32(a + f32(p)) for a, p in zip(y, self.xws[i])]
        return y

    def test_table(self):
        import struct

        f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
        ok32 = [f32(v) for v in self.y(1, 1)]
        bad_one = list(self.y(1, 1))
        bad_one[5] += 0.5
        cases = [
            ("exact", self.y(1, 1), "ok", 1, 1),
            ("float32 rounding", ok32, "ok", 1, 1),
            ("benchmark sums left in y", self.y(1, 37), "missed-restore", 1, 37),
            ("one extra launch", self.y(1, 2), "missed-restore", 1, 2),
            ("final launch never ran", self.y(1, 0), "not-updated", 1, 0),
            ("thread 2's copy restored", self.y(2, 1), "wrong-restore", 2, 1),
            ("thread 0's copy, sums left", self.y(0, 5), "wrong-restore", 0, 5),
            ("one element off", bad_one, "other", None, None),
            ("2000 sums added in float32", self.f32_sums(1, 1, 2000, f32), "missed-restore", 1, 2000),
            ("thread 2's copy, 2000 sums in float32", self.f32_sums(2, 1, 2000, f32), "wrong-restore", 2, 2000),
        ]
        for name, y, kind, base, k in cases:
            with self.subTest(case=name):
                r = rm.classify(y, 1, self.xws, self.y0s)
                self.assertEqual(r["kind"], kind)
                self.assertEqual(r.get("base"), base)
                self.assertEqual(r.get("k"), k)
                ref = rm.reference(self.inputs[1][0], self.inputs[1][1], self.y0s[1])
                self.assertAlmostEqual(r["max_abs_err"], rm.max_abs_error(y, ref))

    def test_summary_counts_exceptions_and_wrong_results_apart(self):
        err = {"type": "KeyError", "where": "triton/runtime/autotuner.py:74 _post_hook", "message": "'y_ptr'"}
        records = [
            {"thread": 0, "error": None, "result": {"kind": "ok", "max_abs_err": 0.0}},
            {"thread": 1, "error": err, "result": {"kind": "not-updated", "max_abs_err": 1.3, "base": 1, "k": 0}},
            {"thread": 2, "error": err, "result": {"kind": "ok", "max_abs_err": 0.0}},
            {"thread": 3, "error": None, "result": {"kind": "wrong-restore", "max_abs_err": 1000.2, "base": 0, "k": 1}},
            {"thread": 4, "error": None, "result": None},
        ]
        s = rm.summarize(records)
        self.assertEqual(s["exceptions"], {"KeyError at triton/runtime/autotuner.py:74 _post_hook": 2})
        self.assertEqual(s["threads_raised"], 2)
        self.assertEqual([w["thread"] for w in s["wrong"]], [1, 3])
        self.assertEqual(s["wrong_silent"], 1)
        self.assertEqual(s["kinds"], {"not-checked": 1, "not-updated": 1, "ok": 2, "wrong-restore": 1})


@unittest.skipUnless(_has("triton"), "triton is not importable here")
class Releases(unittest.TestCase):
    """A release's autotuner.py over the installed Triton, in a fresh interpreter each (the
    load rebinds triton.runtime.autotuner for the whole process)."""

    def run_py(self, code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=REPO, env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "tools", "experiments")))

    def test_release_logic_over_installed_compiler(self):
        for release in ("3.8", "3.9"):
            v = rm.RELEASES[release]
            try:
                src = rm.autotuner_source(release)
            except SystemExit as e:
                self.skipTest(str(e.code))
            with self.subTest(release=release):
                p = self.run_py(
                    "import restore_matters as rm, triton, sys\n"
                    "m, origin = rm.load_release(%r)\n"
                    "from triton.runtime import autotuner as B\n"
                    "assert B is m and sys.modules['triton.runtime.autotuner'] is m\n"
                    "assert triton.autotune is m.autotune and triton.Config is m.Config\n"
                    "assert m.__file__ == %r, m.__file__\n"
                    "for f in rm.patch_files(rm.parse_args(['--fix', 'tls-nargs'])): rm.load_patch(f)\n"
                    "assert isinstance(m.Autotuner.__dict__['nargs'], property)\n"
                    "import re; from triton import knobs\n"
                    "for g, k in re.findall(r'\\bknobs\\.([a-z_]+)\\.([a-z_]+)\\b', open(m.__file__).read()):\n"
                    "    assert hasattr(getattr(knobs, g), k), (g, k)\n"
                    "assert knobs.autotuning.listener is None\n"
                    "print(origin)\n" % (release, src))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("Triton %s logic from" % v, p.stdout)
                # 3.8 and 3.9 read knobs.autotuning.listener after tuning; the installed 3.6 has none
                self.assertIn("shims: knobs.autotuning.listener=None", p.stdout)


@unittest.skipUnless(_cuda(), "needs torch and a CUDA device (tools/scripts/h200-gpu-settle.sh runs the trials)")
class OnTheGpu(unittest.TestCase):
    def test_one_trial_of_the_lock_runs_clean(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rm.main(["--fix", "lock-run", "--trials", "1", "--threads", "2", "--configs", "2", "--n", "4096"])
        import json

        line = json.loads(out.getvalue().splitlines()[-1])
        self.assertEqual(line["threads_raised"], 0)
        self.assertEqual(line["wrong"], [])


if __name__ == "__main__":
    unittest.main()
