"""CPU tests of issue 31's GPU entry script and its overhead table: tools/scripts/h200-gpu-settle.sh
--dry-run prints every command of every section and runs none (no folder made, exit 0; 64 on an
unknown argument), and tools/scripts/launch-overhead-table.py turns a synthetic log into the
table with the overheads computed by hand.

Run: build/py/venv/bin/python -m unittest tests/python/test_gpu_settle.py
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(REPO, "tools", "scripts", "h200-gpu-settle.sh")
TABLE = os.path.join(REPO, "tools", "scripts", "launch-overhead-table.py")


def dry_run(*args, **env):
    out = tempfile.mkdtemp(prefix="settle-dry-")
    os.rmdir(out)  # the dry run must not make it
    e = dict(os.environ, OUT=out, **env)
    p = subprocess.run(["bash", SCRIPT, "--dry-run", *args], capture_output=True, text=True, env=e, cwd="/")
    return p, out


class DryRun(unittest.TestCase):
    def test_every_cell_and_section_is_printed_and_nothing_runs(self):
        p, out = dry_run()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(out), "a dry run made %s" % out)
        cmds = [l[2:] for l in p.stdout.splitlines() if l.startswith("$ ")]
        fixes = ["none", "prewarm", "lock-run", "tls-nargs", "tls-state", "lock-key-event"]
        for rel in ("3.6", "3.8", "3.9"):
            for fix in fixes:
                with self.subTest(release=rel, fix=fix):
                    self.assertTrue(any("restore_matters.py --release %s --fix %s --trials 8 --threads 8" % (rel, fix) in c
                                        for c in cmds))
            model = "triton" if rel == "3.6" else "triton-" + rel
            with self.subTest(release=rel, what="recorded with the probe, replayed by its model"):
                self.assertTrue(any("record --probe triton -o restore-%s-none-h200.rrt" % rel in c for c in cmds))
                self.assertTrue(any("replay --recorded --model %s" % model in c and "restore-%s-none" % rel in c for c in cmds))
                for fix in fixes:
                    self.assertTrue(any("check" in c and "--fix %s --model %s" % (fix, model) in c for c in cmds))
        engine = [c for c in cmds if "--engine python" in c]
        self.assertTrue(engine and all("restore-3.6-" in c or "restore-fla-" in c for c in engine), engine)
        self.assertFalse(any("replay --recorded --engine python" in c for c in cmds))
        for fix in fixes:
            self.assertTrue(any("restore_matters.py --fla --fix %s" % fix in c for c in cmds))
        self.assertTrue(any("--model fla" in c for c in cmds))
        self.assertTrue(any("pip install" in c and "--no-index" in c and ".whl" in c for c in cmds))
        self.assertTrue(any("cupti_activity_overhead act-shared" in c for c in cmds))
        self.assertTrue(any("rerace' record -o rate.rrt" in c and "gpu_launches" in c for c in cmds))
        self.assertTrue(any("launch-overhead-table.py" in c for c in cmds))
        self.assertTrue(any("native-multigpu-h200.rrt" in c for c in cmds))

    def test_sections_and_sizes_are_chosen_by_the_environment(self):
        p, _ = dry_run(SECTIONS="trials", RELEASES="3.9", FIXES="tls-nargs", TRIALS="3", THREADS="4")
        self.assertEqual(p.returncode, 0, p.stderr)
        cmds = [l[2:] for l in p.stdout.splitlines() if l.startswith("$ ")]
        runs = [c for c in cmds if "--release" in c]
        self.assertEqual(len(runs), 1, cmds)
        self.assertIn("--release 3.9 --fix tls-nargs --trials 3 --threads 4", runs[0])
        self.assertFalse(any("rerace" in c for c in cmds))

    def test_prepare_is_printed(self):
        p, _ = dry_run("--prepare")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pip download", p.stdout)
        self.assertIn("fla-core==0.6.0", p.stdout)
        self.assertIn(".devsrc/triton-3.9.0/triton/runtime", p.stdout)
        self.assertIn("librerace_cupti.so", p.stdout)

    def test_unknown_argument_is_a_usage_error(self):
        p = subprocess.run(["bash", SCRIPT, "--everything"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 64)
        self.assertIn("unknown argument '--everything'", p.stderr)


class OverheadTable(unittest.TestCase):
    LOG = """== overhead
ovh cupti mode=off spin=0 threads=8 rep=0 launch_part_us=27.50 trial_us=40.00
ovh cupti mode=off spin=0 threads=8 rep=1 launch_part_us=28.50 trial_us=41.00
ovh cupti mode=act-shared spin=0 threads=8 rep=0 launch_part_us=30.00 trial_us=44.00
ovh cupti mode=act-shared spin=0 threads=8 rep=1 launch_part_us=29.00 trial_us=43.00
ovh launches plain threads=8 launches=20000: gpu_launches: done in 0.400000 s
ovh launches plain threads=8 launches=20000: gpu_launches: done in 0.500000 s
ovh launches plain threads=8 launches=20000: gpu_launches: done in 0.900000 s
ovh launches recorded threads=8 launches=20000: gpu_launches: done in 0.660000 s
ovh launches recorded threads=8 launches=20000: gpu_launches: done in 0.980000 s
ovh launches recorded threads=8 launches=20000: gpu_launches: done in 0.580000 s
ovh step plain --tokens 512 --layers 8: step 0: 900.000 ms
ovh step plain --tokens 512 --layers 8: step 1: 10.000 ms
ovh step plain --tokens 512 --layers 8: step 2: 12.000 ms
ovh step recorded --tokens 512 --layers 8: step 0: 990.000 ms
ovh step recorded --tokens 512 --layers 8: step 1: 11.000 ms
ovh step recorded --tokens 512 --layers 8: step 2: 12.000 ms
unrelated line
"""

    def run_table(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(text)
        try:
            return subprocess.run([sys.executable, TABLE, f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)

    def test_overheads_by_hand(self):
        p = self.run_table(self.LOG)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = p.stdout.splitlines()
        launches = next(r for r in rows if "gpu_launches" in r)
        # medians 0.5 and 0.66 s over 160,000 launches: 1.00 us a launch; activity 29.5 - 28.0 = 1.50 us
        self.assertIn("0.5000 s", launches)
        self.assertIn("0.6600 s", launches)
        self.assertIn("1.00 us per launch", launches)
        self.assertIn("1.50 us per launch", launches)
        step = next(r for r in rows if "rerace-train-step" in r)
        # steady steps only (step 0 tunes): medians 11.0 and 11.5 ms
        self.assertIn("11.000 ms", step)
        self.assertIn("11.500 ms", step)
        self.assertIn("0.500 ms per step (4.5 %)", step)

    def test_a_log_without_the_lines_is_bad_input(self):
        p = self.run_table("== nothing here\n")
        self.assertEqual(p.returncode, 65)
        self.assertIn("holds no 'ovh ' line", p.stderr)


class FidelityTable(unittest.TestCase):
    """restore-matters-table.py: exceptions and silent wrong results counted apart, per cell,
    beside the verdicts; synthetic lines in restore_matters.py's format."""

    def test_cells_by_hand(self):
        sys.path.insert(0, os.path.join(REPO, "tools", "experiments"))
        import json

        import restore_matters as rm

        err = {"type": "KeyError", "where": "triton/runtime/autotuner.py:74 _post_hook", "message": "'y_ptr'"}
        ok = {"kind": "ok", "max_abs_err": 0.0}

        def line(release, fix, records, fla=False):
            d = {"release": release, "fix": fix, "fla": fla, "trial": 0, "seconds": 1.0}
            d.update(rm.summarize(records))
            d["threads"] = records
            return json.dumps(d)

        trials = [
            json.dumps({"header": True, "release": "3.8"}),
            line("3.8", "none", [{"thread": 0, "error": None, "result": {"kind": "missed-restore", "max_abs_err": 42.0, "base": 0, "k": 20}},
                                 {"thread": 1, "error": None, "result": ok}]),
            line("3.8", "none", [{"thread": 0, "error": None, "result": {"kind": "wrong-restore", "max_abs_err": 1000.5, "base": 1, "k": 1}},
                                 {"thread": 1, "error": None, "result": ok}]),
            line("3.6", "none", [{"thread": 0, "error": err, "result": {"kind": "not-updated", "max_abs_err": 1.2, "base": 0, "k": 0}},
                                 {"thread": 1, "error": None, "result": ok}]),
            line("3.6", "lock-run", [{"thread": 0, "error": None, "result": ok}]),
            line("3.6", "none", [{"thread": 0, "error": None, "result": ok}], fla=True),
        ]
        verdicts = [
            "== verdict 3.8 model triton-3.8 fix=none: verdict: fix 'none' FAILS: counterexample found after 4 schedules FAILED: wrong-restore in thread 2",
            "== verdict 3.8 engine fix=none: verdict: fix 'none' FAILS: ... FAILED: missed-restore in thread 1",
            "== verdict 3.6 model triton fix=lock-run: verdict: fix 'lock-run' holds for every interleaving",
            "== verdict 3.6 engine fix=lock-run: verdict: inconclusive: no counterexample",
        ]
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "t.jsonl"), "w") as f:
            f.write("\n".join(trials) + "\n")
        with open(os.path.join(d, "v.log"), "w") as f:
            f.write("\n".join(verdicts) + "\n")
        script = os.path.join(REPO, "tools", "scripts", "restore-matters-table.py")
        p = subprocess.run([sys.executable, script, os.path.join(d, "t.jsonl"), os.path.join(d, "v.log")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {tuple(c.strip() for c in r.split("|")[1:3]): r for r in p.stdout.splitlines() if r.startswith("| 3") or r.startswith("| fla")}
        self.assertIn("| 0 of 2 (0) | 2 of 2 (missed-restore 1, wrong-restore 1; 1e+03) | FAILS: wrong-restore | FAILS: missed-restore |",
                      rows[("3.8", "none")])
        # a thread that raised is counted as raised, not as a silent wrong result
        self.assertIn("| 1 of 1 (1) | 0 of 1 |", rows[("3.6", "none")])
        self.assertIn("| 0 of 1 (0) | 0 of 1 | holds | inconclusive |", rows[("3.6", "lock-run")])
        self.assertIn("| — | — |", rows[("fla", "none")])
        self.assertIn("- KeyError at triton/runtime/autotuner.py:74 _post_hook: 1 threads in all", p.stdout)
        p = subprocess.run([sys.executable, script, os.path.join(d, "v.log")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 65)


if __name__ == "__main__":
    unittest.main()
