"""The Python API's JSON-to-object layer (python/rerace/_results.py, _run.py) against what
`rerace replay|fuzz|check --json` prints, and its errors; with RERACE_EXE (ctest sets it to the
build's rerace) the same end to end on a sample trace, in the model engine.

Run: python -m unittest -v tests/python/test_api.py (from the source root; no build needed for
the JSON cases)."""
import os
import stat
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import rerace  # noqa: E402
from rerace import _run  # noqa: E402
from rerace._results import CheckResult, FuzzResult, ReplayResult  # noqa: E402
from rerace.testing import Inconclusive, RaceFound, assert_fails, assert_holds  # noqa: E402

SAMPLE = ROOT / "traces" / "samples" / "triton-none-h200.rrt"

FINDING = {"code": "nargs-none", "silent": False, "thread": 1, "thread_name": "ThreadPoolExecutor-0_0",
           "step": 110, "type": "TypeError", "message": "'NoneType' object is not a mapping",
           "where": "triton/runtime/autotuner.py:233 in benchmark",
           "words": "nargs is None after thread 1 benchmarked: thread 2 set it to None at step 109"}
RUN = {"trace": "/t/step.rrt", "engine": "python", "fix": "none", "strategy": "DPOR, shrunk",
       "failed": True, "steps": 141, "findings": [FINDING], "duplicates": [],
       "schedule": "rs1:0.1*53.2*56.1.3*5", "patch_reach": ["your Autotuner._bench replacement (bad.py:5) was entered by 2 of 8 threads' calls"]}


def check_json(verdict, exhausted, counterexample=None):
    return {"trace": "/t/step.rrt", "fix": "none", "patches": [{"file": "bad.py", "sha256": "04"}],
            "engine": "python", "failure": "", "verdict": verdict, "explored": 43,
            "search": {"method": "dpor", "bound": 1, "runs": 43, "max_runs": 200,
                       "exhausted": exhausted, "sampled": 0, "probed": 1},
            "cost": None, "counterexample": counterexample}


BASE = ["--engine", "python", "--python-exe", "/venv/bin/python", "--patch", "bad.py"]


class FromPath(unittest.TestCase):
    """The replay commands the results print name rerace as found on PATH: "rerace ..." (these
    from-JSON tests run the commands they print nowhere, so they pin that)."""

    def setUp(self):
        self._saved = rerace._results.invoked_name
        rerace._results.invoked_name = lambda: "rerace"

    def tearDown(self):
        rerace._results.invoked_name = self._saved


class InvokedName(unittest.TestCase):
    """Issue 48 item 4: a printed command runs as printed: "rerace" when the PATH's rerace is the
    binary the API runs, else that binary's path."""

    def test_the_path_unless_rerace_on_path_is_the_same_binary(self):
        with tempfile.TemporaryDirectory() as d:
            exe = Path(d) / "rerace"
            exe.write_text("#!/bin/sh\n")
            exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
            saved = dict(os.environ)
            try:
                os.environ["RERACE_EXE"] = str(exe)
                os.environ["PATH"] = "/usr/bin:/bin"
                self.assertEqual(_run.invoked_name(), str(exe))
                os.environ["PATH"] = d + ":/usr/bin:/bin"
                self.assertEqual(_run.invoked_name(), "rerace")
            finally:
                os.environ.clear()
                os.environ.update(saved)


class CheckFromJson(FromPath):
    def test_fails_carries_counterexample_and_replay_command(self):
        r = CheckResult.from_json(check_json("fails", False, RUN), 1, ["rerace", "check"], BASE)
        self.assertTrue(r.fails)
        self.assertFalse(r.holds)
        self.assertFalse(r)
        self.assertEqual(r.patches, ["bad.py"])
        f = r.counterexample.findings[0]
        self.assertEqual((f.kind, f.thread, f.place, f.type), ("nargs-none", 1,
                         "triton/runtime/autotuner.py:233 in benchmark", "TypeError"))
        self.assertIn("TypeError: 'NoneType' object is not a mapping", f.traceback)
        self.assertEqual(r.counterexample.replay_command,
                         "rerace replay /t/step.rrt --schedule 'rs1:0.1*53.2*56.1.3*5' --engine python "
                         "--python-exe /venv/bin/python --patch bad.py")
        self.assertIn("nargs-none in thread 1 at triton/runtime/autotuner.py:233", repr(r))
        text = str(r)
        for part in ("FAILS", "nargs-none in thread 1", "replay it: rerace replay",
                     "patch reach: your Autotuner._bench"):
            self.assertIn(part, text)
        # A counterexample's first line gives no bound or budget: it may come from the sampled
        # schedules before the search, whose bound then says nothing.
        self.assertNotIn("bound", text.splitlines()[0])
        self.assertNotIn("exhausted", text.splitlines()[0])
        inc = CheckResult.from_json(check_json("inconclusive", False), 3, ["rerace"], [])
        self.assertIn("not exhausted", str(inc).splitlines()[0])

    def test_holds_only_when_the_verdict_says_so(self):
        cases = [  # (verdict, exit code, exhausted, holds)
            ("holds", 0, True, True),
            ("inconclusive", 3, False, False),
        ]
        for verdict, code, exhausted, holds in cases:
            with self.subTest(verdict=verdict):
                r = CheckResult.from_json(check_json(verdict, exhausted), code, ["rerace"], [])
                self.assertEqual(r.holds, holds)
                self.assertEqual(r.exhausted, exhausted)
                self.assertEqual(r.exit_code, code)
                self.assertIsNone(r.counterexample)

    def test_a_holds_says_whether_the_bound_cut_the_search(self):
        # DPOR under a bound covers its own schedules; only with no race reversal cut by the
        # bound did it cover every interleaving. The summary line says which.
        d = check_json("holds", True)
        d["search"].update(cut=12, complete=False)
        cut = CheckResult.from_json(d, 0, ["rerace"], [])
        self.assertEqual((cut.search.cut, cut.search.complete), (12, False))
        self.assertIn("12 race reversals cut by the bound", str(cut).splitlines()[0])
        self.assertNotIn("every interleaving", str(cut))
        d["search"].update(cut=0, complete=True)
        whole = CheckResult.from_json(d, 0, ["rerace"], [])
        self.assertTrue(whole.search.complete)
        self.assertIn("every interleaving", str(whole).splitlines()[0])
        self.assertNotIn("cut", str(whole).splitlines()[0])
        # assert_holds passes both; asked for every interleaving, only the complete one.
        assert_holds(cut)
        assert_holds(whole, every_interleaving=True)
        with self.assertRaises(Inconclusive) as e:
            assert_holds(cut, every_interleaving=True)
        self.assertIn("the bound refused 12 race reversals", str(e.exception))

    def test_a_certificate_over_k_threads_passes_every_interleaving_of_k(self):
        d = check_json("holds", True)
        d["search"].update(cut=12, complete=False)
        plain = CheckResult.from_json(d, 0, ["rerace"], [])
        self.assertIsNone(plain.certificate)
        with self.assertRaises(Inconclusive) as e:
            assert_holds(plain, every_interleaving=2)
        self.assertIn("no certificate", str(e.exception))
        d["certificate"] = {"threads": 3, "of": 8, "classes": 1, "combinations": 56,
                            "runs": 19128, "complete": True}
        r = CheckResult.from_json(d, 0, ["rerace"], [])
        self.assertEqual((r.certificate.threads, r.certificate.of, r.certificate.runs), (3, 8, 19128))
        self.assertIn("every interleaving of any 3 of the 8 recorded threads", str(r).splitlines()[0])
        assert_holds(r, every_interleaving=3)
        assert_holds(r, every_interleaving=2)
        with self.assertRaises(Inconclusive):
            assert_holds(r, every_interleaving=4)
        with self.assertRaises(Inconclusive):  # the whole program's search was not complete
            assert_holds(r, every_interleaving=True)
        d["certificate"]["complete"] = False
        with self.assertRaises(Inconclusive) as e:
            assert_holds(CheckResult.from_json(d, 0, ["rerace"], []), every_interleaving=3)
        self.assertIn("not complete", str(e.exception))

    def test_a_verdict_the_exit_code_contradicts_is_an_error(self):
        with self.assertRaises(rerace.Error) as e:
            CheckResult.from_json(check_json("holds", True), 1, ["rerace"], [])
        self.assertEqual(e.exception.exit_code, 70)

    def test_assert_holds_raises_with_the_report(self):
        bad = CheckResult.from_json(check_json("fails", False, RUN), 1, ["rerace", "check"], BASE)
        with self.assertRaises(RaceFound) as e:
            assert_holds(bad)
        self.assertIn("rerace replay /t/step.rrt --schedule", str(e.exception))
        assert_fails(bad)
        inc = CheckResult.from_json(check_json("inconclusive", False), 3, ["rerace"], [])
        with self.assertRaises(Inconclusive) as e:  # no race was found: not a RaceFound
            assert_holds(inc)
        self.assertIn("stopped at its budget", str(e.exception))
        self.assertIn("not a holds", str(e.exception))
        bound0 = check_json("inconclusive", True)
        bound0["search"]["bound"] = 0
        self.assertIn("--bound 0 never preempts",
                      str(CheckResult.from_json(bound0, 3, ["rerace"], [])))


class ReplayAndFuzzFromJson(FromPath):
    def test_schema_1_nulls_read_as_absent(self):
        # A silent failure (type and message null), a deadlock (thread null), no search run.
        silent = dict(FINDING, code="wrong-restore", silent=True, type=None, message=None)
        dead = dict(FINDING, code="deadlock", thread=None, thread_name=None)
        run = dict(RUN, findings=[silent, dead], patch_reach=None, model="triton", races=None)
        r = ReplayResult.from_json(run, [])
        self.assertEqual(r.findings[0].exception, "")
        self.assertTrue(r.findings[0].traceback.startswith("(silent corruption: nothing raised)"),
                        r.findings[0].traceback)
        self.assertEqual((r.findings[1].thread, r.findings[1].thread_name), (-1, ""))
        self.assertEqual(r.patch_reach, [])
        c = check_json("fails", False, run)
        c["search"] = dict(c["search"], method=None, bound=None)
        self.assertIsNone(CheckResult.from_json(c, 1, ["rerace", "check"], []).search.bound)

    def test_replay(self):
        r = ReplayResult.from_json(RUN, [])
        self.assertTrue(r.failed)
        self.assertEqual(r.findings[0].thread_name, "ThreadPoolExecutor-0_0")
        self.assertIn("--schedule 'rs1:0.1*53.2*56.1.3*5'", r.replay_command)

    def test_fuzz(self):
        d = {"rerace_fuzz": 1, "traces": [{"trace": "/t/a.rrt", "fix": "none", "engine": "model",
             "runs": 20, "failing": 20, "failures": [
                 {"failure": "wrong-restore at triton/runtime/autotuner.py:74 in _post_hook",
                  "seed": 1, "schedule": "rs1:6.4", "thread_name": "T", "type": "(none)",
                  "message": "", "words": "w", "silent": True, "first": True}]}]}
        f = FuzzResult.from_json(d, 1, ["rerace", "fuzz"], ["--fix", "none"])
        self.assertTrue(f.failed)
        self.assertEqual(f.failures[0].kind, "wrong-restore")
        self.assertEqual(f.failures[0].place, "triton/runtime/autotuner.py:74 in _post_hook")
        self.assertEqual(f.failures[0].replay_command,
                         "rerace replay /t/a.rrt --schedule rs1:6.4 --engine model --fix none")


class Errors(unittest.TestCase):
    def fake_exe(self, script):
        d = tempfile.mkdtemp()
        p = Path(d) / "rerace"
        p.write_text("#!/bin/sh\n" + script)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
        return str(p)

    def test_a_non_verdict_exit_is_an_error_with_the_one_line_message(self):
        exe = self.fake_exe("echo 'engine: starting' >&2\n"
                            "echo 'rerace: error: x.rrt: cannot open the trace: No such file or directory' >&2\nexit 66\n")
        os.environ["RERACE_EXE"] = exe
        try:
            with self.assertRaises(rerace.Error) as e:
                rerace.check("x.rrt")
        finally:
            del os.environ["RERACE_EXE"]
        self.assertEqual(e.exception.exit_code, 66)
        self.assertEqual(e.exception.message, "x.rrt: cannot open the trace: No such file or directory")
        self.assertEqual(e.exception.command[1:],
                         ["check", "x.rrt", "--python-exe", sys.executable, "--json"])

    def test_the_default_engine_is_tried_in_this_interpreter(self):
        # engine=None is the command's --engine auto: it looks for the recorded Triton here.
        self.assertEqual(rerace._common(None, None, None, None, []), ["--python-exe", sys.executable])
        self.assertEqual(rerace._common(None, None, "model", None, []), ["--engine", "model"])
        self.assertEqual(rerace._common(None, None, None, "/py", []), ["--python-exe", "/py"])

    def test_a_replay_command_names_the_engine_that_ran(self):
        from rerace._results import engine_named
        base = ["--python-exe", "/py", "--fix", "lock-run"]
        self.assertEqual(engine_named(base, "python: CPython 3.12 (gil), Triton 3.6.0, patches none"),
                         ["--engine", "python", *base])
        self.assertEqual(engine_named(base, "model triton"), ["--engine", "model", "--fix", "lock-run"])
        self.assertEqual(engine_named(["--engine", "python", *base], "python: x"),
                         ["--engine", "python", *base])

    def test_patch_selects_the_python_engine_in_this_interpreter(self):
        args = rerace._common(None, "fix.py", None, None, [])
        self.assertEqual(args, ["--engine", "python", "--python-exe", sys.executable, "--patch", "fix.py"])


@unittest.skipUnless(os.environ.get("RERACE_EXE"), "RERACE_EXE not set (ctest sets it to the build's rerace)")
class EndToEnd(unittest.TestCase):
    def test_check_replay_fuzz_on_the_sample(self):
        r = rerace.check(SAMPLE)
        self.assertEqual(r.verdict, "fails")
        # The default engine (auto) with this interpreter, which has Triton 3.6: the real code.
        self.assertTrue(r.engine.startswith("python"), r.engine)
        self.assertIn("--engine python", r.counterexample.replay_command)
        again = rerace.replay(SAMPLE, schedule=r.counterexample.schedule)
        self.assertEqual(again.findings, r.counterexample.findings)
        self.assertTrue(rerace.fuzz(SAMPLE, runs=5).failed)
        self.assertFalse(rerace.fuzz(SAMPLE, runs=5, fix="lock-run").failed)
        with self.assertRaises(rerace.Error) as e:
            rerace.replay(SAMPLE, seed=1, args=["--bogus"])
        self.assertEqual(e.exception.exit_code, 64)

    def test_the_commands_options_are_keyword_arguments(self):
        r = rerace.check(SAMPLE, engine="model", fix="lock-run", bound=2, max_runs=5, seed=3)
        self.assertEqual(r.verdict, "inconclusive")  # 5 runs do not exhaust bound 2
        self.assertEqual((r.search.bound, r.search.max_runs, r.search.runs), (2, 5, 5))
        with self.assertRaises(Inconclusive):
            assert_holds(r)
        bad = rerace.check(SAMPLE, engine="model", failure="KeyError", runs=10)
        self.assertEqual(bad.verdict, "fails")
        f = bad.findings[0]
        self.assertEqual((f.code, f.where), (f.kind, f.place))
        self.assertEqual(f.exception, f"{f.type}: {f.message}")
        self.assertEqual(f.type, "KeyError")
        one = rerace.replay(SAMPLE, engine="model", seed=1, only=[1, 2])
        self.assertIn("--only 1,2", one.replay_command)
        self.assertLessEqual(len({x.thread for x in one.findings}), 2)

    def test_check_with_a_certificate(self):
        r = rerace.check(SAMPLE, fix="lock-run", threads=2, jobs=2, args=["--runs", "0"])
        self.assertEqual(r.verdict, "holds")
        self.assertTrue(r.certificate.complete)
        self.assertEqual((r.certificate.threads, r.certificate.of), (2, 8))
        assert_holds(r, every_interleaving=2)
        bad = rerace.check(SAMPLE, threads=2)
        self.assertEqual(bad.verdict, "fails")
        self.assertIn("--only", bad.counterexample.replay_command)


if __name__ == "__main__":
    unittest.main()
