"""Every command's --json against docs/schema/rerace.schema.json (schema version 1), under both
engines and in each mode that changes what a result holds: a failure and a pass, a silent
failure, a deadlock, --races, --recorded, a probe's counterexample, --bound 0, a certificate,
--failure, fuzz with a corrupt trace among good ones, merge. And the same keys whichever engine
ran (docs/JSON.md). Needs jsonschema (tools/scripts/python-envs.sh installs it in build/py/venv);
the real-code cases need a venv with Triton 3.6 (RERACE_PY_ROOT)."""
import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXE = os.environ.get("RERACE_EXE", os.path.join(ROOT, "build", "bin", "rerace"))
PY_ROOT = os.environ.get("RERACE_PY_ROOT", os.path.join(ROOT, "build", "py"))
TRACE = os.path.join("traces", "samples", "triton-none-h200.rrt")
SCHEMA = os.path.join(ROOT, "docs", "schema", "rerace.schema.json")

try:
    import jsonschema
except ImportError:  # said by the skip of every test below
    jsonschema = None


def venv_python():
    for v in ("venv312", "venv"):
        py = os.path.join(PY_ROOT, v, "bin", "python")
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import triton, sys; sys.exit(triton.__version__ != '3.6.0')"],
                capture_output=True).returncode == 0:
            return py
    return None


def keys(obj, path=""):
    """Every key path of a JSON value (list items merged), for comparing shapes."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(path + "/" + k)
            out |= keys(v, path + "/" + k)
    elif isinstance(obj, list):
        for v in obj:
            out |= keys(v, path + "[]")
    return out


@unittest.skipIf(jsonschema is None, "jsonschema is not installed (tools/scripts/python-envs.sh installs it)")
class JsonSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(SCHEMA) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        cls.validator = jsonschema.Draft202012Validator(schema)
        cls.python = venv_python()
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_json(self, *args, engine="model", codes=(0, 1, 3)):
        cmd = [EXE, *args, "--json", "--engine", engine]
        if engine == "python":
            if not self.python:
                self.skipTest("no venv with Triton 3.6.0 under " + PY_ROOT)
            cmd += ["--python-exe", self.python]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        self.assertIn(p.returncode, codes, f"{cmd}: exit {p.returncode}: {p.stderr[-2000:]}")
        out = json.loads(p.stdout)
        errors = sorted(self.validator.iter_errors(out), key=lambda e: list(e.absolute_path))
        self.assertEqual([], [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors], cmd)
        self.assertEqual(1, out["schema_version"])
        return out

    def test_replay_under_both_engines_has_one_shape(self):
        model = self.run_json("replay", TRACE, "--seed", "1")
        self.assertEqual("replay", model["command"])
        self.assertTrue(model["failed"])
        self.assertIsNone(model["patch_reach"])
        self.assertIsNone(model["races"])
        self.assertIsNone(model["recorded_comparison"])
        silent = [f for f in model["findings"] if f["silent"]]
        self.assertTrue(silent, "seed 1 of the brief's recording has a silent failure")
        self.assertTrue(all(f["type"] is None and f["message"] is None for f in silent))
        python = self.run_json("replay", TRACE, "--seed", "1", engine="python")
        self.assertIsNone(python["model"])
        self.assertIsNone(python["makespan_ns"])
        self.assertIsInstance(python["patch_reach"], list)
        self.assertEqual(set(model), set(python))
        self.assertEqual(keys(model["findings"][0]), keys(python["findings"][0]))

    def test_replay_modes(self):
        races = self.run_json("replay", TRACE, "--seed", "2", "--races")
        self.assertIsInstance(races["races"], list)
        recorded = self.run_json("replay", TRACE, "--recorded")
        self.assertIsInstance(recorded["recorded_comparison"], dict)
        held = self.run_json("replay", TRACE, "--seed", "1", "--fix", "lock-run")
        self.assertFalse(held["failed"])
        self.assertEqual([], held["findings"])

    def test_a_deadlock_is_no_one_threads(self):
        out = self.run_json("replay", TRACE, "--seed", "1", "--fix", "lock=run:G,benchmark:G")
        dead = [f for f in out["findings"] if f["code"] == "deadlock"]
        self.assertTrue(dead, out["findings"])
        self.assertIsNone(dead[0]["thread"])
        self.assertIsNone(dead[0]["thread_name"])

    def test_check_verdicts(self):
        fails = self.run_json("check", TRACE, "--fix", "none")
        self.assertEqual("fails", fails["verdict"])
        self.assertIsNone(fails["cost"])
        s = fails["search"]
        self.assertEqual(fails["explored"], s["runs"] + s["sampled"] + s["probed"] + s["certificate_runs"])
        holds = self.run_json("check", TRACE, "--fix", "lock-run", "--runs", "5")
        self.assertEqual("holds", holds["verdict"])
        self.assertIsInstance(holds["cost"]["step_ms"], float)
        self.assertIsNone(holds["failure"])
        none = self.run_json("check", TRACE, "--fix", "lock-run", "--bound", "0")
        self.assertEqual("inconclusive", none["verdict"])
        cert = self.run_json("check", TRACE, "--fix", "lock-run", "--threads", "2", "--runs", "0")
        self.assertTrue(cert["certificate"]["complete"])
        self.assertGreater(cert["search"]["certificate_runs"], 0)
        only = self.run_json("check", TRACE, "--fix", "none", "--failure", "KeyError")
        self.assertEqual("KeyError", only["failure"])

    def test_check_under_the_real_code(self):
        out = self.run_json("check", TRACE, "--fix", "none", engine="python")
        self.assertEqual("fails", out["verdict"])
        if out["search"]["runs"] == 0:  # found by the sampled probe: no search ran, no bound
            self.assertIsNone(out["search"]["method"])
            self.assertIsNone(out["search"]["bound"])
        self.assertEqual("python", out["counterexample"]["engine"])
        model = self.run_json("check", TRACE, "--fix", "none")
        self.assertEqual(set(model), set(out))
        self.assertEqual(set(model["counterexample"]), set(out["counterexample"]))

    def test_fuzz_and_merge(self):
        bad = os.path.join(self.tmp.name, "bad.rrt")
        with open(os.path.join(ROOT, TRACE), "rb") as f:
            head = f.read(4000)
        with open(bad, "wb") as f:  # a trace cut short
            f.write(head)
        out = self.run_json("fuzz", TRACE, bad, "--runs", "3", codes=(1, 65))
        self.assertEqual("fuzz", out["command"])
        errors = [t for t in out["traces"] if t["error"] is not None]
        self.assertEqual(1, len(errors), "the corrupt trace is an error case, the good one kept")
        self.assertIsInstance(errors[0]["exit_code"], int)
        shards, runs = [], 0
        for k in ("0/2", "1/2"):
            path = os.path.join(self.tmp.name, f"shard{k[0]}.json")
            res = self.run_json("fuzz", TRACE, "--runs", "4", "--shard", k, "--races")
            self.assertIsInstance(res["traces"][0]["races"], list)
            runs += res["traces"][0]["runs"]
            with open(path, "w") as f:
                json.dump(res, f)
            shards.append(path)
        p = subprocess.run([EXE, "merge", *shards], cwd=ROOT, capture_output=True, text=True)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        merged = json.loads(p.stdout)
        self.assertEqual([], [e.message for e in self.validator.iter_errors(merged)])
        self.assertEqual(runs, merged["traces"][0]["runs"])
        py = self.run_json("fuzz", TRACE, "--runs", "2", engine="python")
        self.assertEqual(set(py["traces"][0]), set(out["traces"][0]))


if __name__ == "__main__":
    unittest.main()
