"""What a run changes, put back (replay/engine/python/rerace_real/reset.py): ``Pristine`` puts
back in place every container and object reachable from its roots, keeps what was shared
shared, and says why a process cannot run on where it cannot put a change back. The engine's
own runs in one process are tested against forks in tests/replay/engine/in_process_test.cc."""

import collections
import functools
import os
import random
import sys
import threading
import unittest

ENGINE_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "replay", "engine", "python"))
sys.path.insert(0, ENGINE_DIR)
from rerace_real import reset  # noqa: E402


class Config:
    def __init__(self):
        self.kwargs = {"BLOCK": 64}


class Tuner:
    shared = []  # a class attribute a run may append to or rebind

    def __init__(self, cache):
        self.cache = cache
        self.configs = [Config(), Config()]
        self.nargs = None


def counter():
    n = 0

    def bump():
        nonlocal n
        n += 1
        return n
    return bump


@functools.lru_cache(maxsize=None)
def cached(k):
    return k


class PristineTest(unittest.TestCase):
    def make(self):
        cache = {}
        a, b = Tuner(cache), Tuner(cache)  # one cache dict, as two recorded tuners shared it
        globals_ = {"a": a, "b": b, "seen": collections.deque([1]), "raw": bytearray(b"xy"),
                    "rng": random.Random(3), "bump": counter(), "tags": {"t"}, "box": (Config(),)}
        return a, b, globals_

    def test_everything_reachable_is_put_back_in_place(self):
        a, b, g = self.make()
        cache, configs, kw = a.cache, a.configs, a.configs[0].kwargs
        first = g["rng"].random()
        g["rng"] = g["rng"]  # the same object: its state is what is put back
        p = reset.Pristine(None, [g], [Tuner])
        before_draw = g["rng"].random()
        p.restore()
        # A run: writes everywhere.
        a.cache["k"] = 1
        a.nargs = {"x": 1}
        a.extra = 5
        a.configs.append(Config())
        kw["BLOCK"] = 128
        g["seen"].append(2)
        g["raw"][0:1] = b"z"
        g["tags"].add("u")
        g["box"][0].kwargs["BLOCK"] = 1
        g["new"] = 1
        g["bump"]()
        g["rng"].random()
        Tuner.shared.append(1)
        Tuner.added = True
        self.assertIsNone(p.restore())
        self.assertIs(a.cache, cache)
        self.assertIs(b.cache, cache)  # still one dict
        self.assertEqual(cache, {})
        self.assertIsNone(a.nargs)
        self.assertFalse(hasattr(a, "extra"))
        self.assertIs(a.configs, configs)
        self.assertEqual(len(configs), 2)
        self.assertEqual(kw, {"BLOCK": 64})
        self.assertEqual(list(g["seen"]), [1])
        self.assertEqual(bytes(g["raw"]), b"xy")
        self.assertEqual(g["tags"], {"t"})
        self.assertEqual(g["box"][0].kwargs, {"BLOCK": 64})
        self.assertNotIn("new", g)
        self.assertEqual(g["bump"](), 1)  # the closure's cell is back at 0
        self.assertEqual(Tuner.shared, [])
        self.assertFalse(hasattr(Tuner, "added"))
        self.assertEqual(g["rng"].random(), before_draw)
        self.assertNotEqual(first, before_draw)

    def test_what_cannot_be_put_back_is_named(self):
        _, _, g = self.make()
        g["cached"] = cached
        p = reset.Pristine(None, [g], [])
        cached(1)
        self.assertIn("lru_cache", p.restore())
        p = reset.Pristine(None, [g], [])
        sys.modules["rerace_test_reset_made"] = type(sys)("rerace_test_reset_made")
        try:
            self.assertIn("imported a module", p.restore())
        finally:
            del sys.modules["rerace_test_reset_made"]
        self.assertIsNone(p.restore())
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        try:
            self.assertIn("thread", p.restore())
        finally:
            stop.set()
            t.join()
        self.assertIsNone(p.restore())


if __name__ == "__main__":
    unittest.main()
