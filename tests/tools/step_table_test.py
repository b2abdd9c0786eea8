"""tools/scripts/step-table.py: the table it reads from a release's source, and its check of a
model file (a changed source is detected, a missing release is a SKIP). Needs no wheel: the
releases here are small sources in temporary "installed" directories."""
import importlib.util
import io
import os
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout, redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "step_table", os.path.join(HERE, "..", "..", "tools", "scripts", "step-table.py"))
st = importlib.util.module_from_spec(spec)
spec.loader.exec_module(st)

SOURCE = textwrap.dedent('''\
    class Autotuner:
        def __init__(self, restore_value):
            self.cache = {}
            self.keys = []

            def _post_hook(kwargs):
                for name, value in self.restore_copies.items():
                    kwargs[name].copy_(value)
                self.restore_copies = {}

            self.post_hook = _post_hook

        def run(self, *args):
            self.nargs = dict(args)
            key = tuple(self.keys)
            if key not in self.cache:

                def benchmark():
                    self.cache[key] = min(self.nargs)

                benchmark()
            config = getattr(self, "cache")[key]
            self.nargs = None
            return config
    ''')

TABLE = [
    "__init__:3 W cache",
    "__init__._post_hook:7 R restore_copies",
    "__init__._post_hook:9 W restore_copies",
    "run:14 W nargs",
    "run:16 R cache",
    "run:22 R cache",
    "run:23 W nargs",
    "run.benchmark:19 R nargs",
    "run.benchmark:19 M cache",
]

MODEL = '''// a model of fake 1.0
// step-table: fake 1.0 fake/autotuner.py Autotuner
{rows}
// end step-table
const char* kRead = "autotuner.py:7 _post_hook: for name, value in "
                    "self.restore_copies.items()";
const char* kWhere = "fake/autotuner.py:19 in benchmark";
const char* kElided = "autotuner.py:14 Autotuner.run: self.nargs = ... (args)";
'''


class Release:
    """A temporary py root with `fake` 1.0 installed (a .dist-info beside the package)."""

    def __init__(self, source):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        d = os.path.join(self.root, "fake-1.0")
        os.makedirs(os.path.join(d, "fake"))
        os.makedirs(os.path.join(d, "fake-1.0.dist-info"))
        self.source = os.path.join(d, "fake", "autotuner.py")
        self.write(source)

    def write(self, source):
        with open(self.source, "w") as f:
            f.write(source)

    def model(self, rows=None):
        path = os.path.join(self.root, "fake_1_0.cc")
        with open(path, "w") as f:
            f.write(MODEL.format(rows="\n".join("//   " + r for r in (rows or TABLE))))
        return path


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = st.main(list(argv))
    return rc, out.getvalue() + err.getvalue()


class TableTest(unittest.TestCase):
    def test_reads_the_shared_accesses_in_evaluation_order(self):
        # self.keys is only stored by __init__ itself: not shared state; a value is read
        # before the attribute it is stored to; nested functions are their own rows.
        self.assertEqual(st.table(SOURCE, "Autotuner"), TABLE)

    def test_unknown_class_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "no class Nope"):
            st.table(SOURCE, "Nope")


class CheckTest(unittest.TestCase):
    def release(self, source):
        r = Release(source)
        self.addCleanup(r.tmp.cleanup)
        return r

    def test_a_model_that_matches_its_release_passes(self):
        r = self.release(SOURCE)
        self.assertEqual(st.check_model(r.model(), r.root), [])
        rc, out = run_main("--py-root", r.root, "--check", r.model())
        self.assertEqual(rc, 0, out)
        self.assertIn("ok fake_1_0.cc", out)

    def test_a_moved_line_is_detected(self):
        r = self.release(SOURCE)
        r.write(SOURCE.replace("    def run(self, *args):\n", "    def run(self, *args):\n        pass\n"))
        errors = st.check_model(r.model(), r.root)
        self.assertIn("step 4: declared `run:14 W nargs`, fake 1.0 has `run:15 W nargs`", "\n".join(errors))
        # The label quoting line 14 no longer matches.
        self.assertTrue(any("line 14 is `pass`" in e for e in errors), errors)
        rc, _ = run_main("--py-root", r.root, "--check", r.model())
        self.assertEqual(rc, 1)

    def test_a_changed_statement_is_detected_in_a_joined_literal(self):
        # The same accesses on the same lines, another text: only the label sees it (in the
        # second of two adjacent C++ literals).
        r = self.release(SOURCE.replace("self.restore_copies.items()", "self.restore_copies.copy().items()"))
        errors = st.check_model(r.model(), r.root)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("line 7 is `for name, value in self.restore_copies.copy().items():`", errors[0])

    def test_a_new_access_is_detected(self):
        r = self.release(SOURCE.replace("        config = getattr", "        self.best_config = 1\n        config = getattr"))
        errors = "\n".join(st.check_model(r.model(), r.root))
        self.assertIn("has `run:22 W best_config`", errors)

    def test_a_malformed_row_is_a_usage_error(self):
        r = self.release(SOURCE)
        rc, out = run_main("--py-root", r.root, "--check", r.model(rows=["run:14 X nargs"]))
        self.assertEqual(rc, 2)
        self.assertIn("is not `// FUNC:LINE R|W|M FIELD`", out)

    def test_a_release_not_installed_is_a_skip(self):
        r = self.release(SOURCE)
        model = r.model()
        with tempfile.TemporaryDirectory() as empty:
            rc, out = run_main("--py-root", empty, "--check", model)
            self.assertEqual(rc, st.SKIP)
            self.assertIn("fake 1.0 is not installed", out)
            rc, out = run_main("--py-root", empty, "emit", "fake", "1.0", "fake/autotuner.py", "Autotuner")
            self.assertEqual(rc, st.SKIP)

    def test_a_file_may_follow_two_releases_and_one_may_be_missing(self):
        r = self.release(SOURCE)
        model = r.model()
        with open(model) as f:
            text = f.read()
        other = "// step-table: fake 2.0 fake/autotuner.py Autotuner\n//   run:14 W nargs\n// end step-table\n"
        with open(model, "w") as f:
            f.write(other + text)
        errors = st.check_model(model, r.root)
        self.assertEqual(errors, ["SKIP fake_1_0.cc: fake 2.0 is not installed under %s "
                                  "(tools/scripts/python-envs.sh installs it)" % r.root])
        rc, _ = run_main("--py-root", r.root, "--check", model)
        self.assertEqual(rc, 0)

    def test_a_mutating_method_is_a_store_into_the_field(self):
        src = SOURCE.replace("        self.nargs = None\n", "        self.cache.pop(key, None)\n        self.nargs = None\n")
        self.assertIn("run:23 M cache", st.table(src, "Autotuner"))

    def test_emit_prints_a_block_the_check_accepts(self):
        r = self.release(SOURCE)
        rc, out = run_main("--py-root", r.root, "emit", "fake", "1.0", "fake/autotuner.py", "Autotuner")
        self.assertEqual(rc, 0)
        model = os.path.join(r.root, "emitted.cc")
        with open(model, "w") as f:
            f.write(out)
        self.assertEqual(st.check_model(model, r.root), [])


if __name__ == "__main__":
    unittest.main()
