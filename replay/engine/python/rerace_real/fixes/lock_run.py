"""Fix `lock-run`: one global ``threading.Lock`` around ``Autotuner.run``.

Stands for the patch teams apply at start-up (and for triton PR 5893, closed unmerged, whose
reviewer said to "protect it outside of the autotuner"): every call of every autotuned kernel
runs under one process-wide lock, so no two threads are ever inside ``Autotuner.run`` at once.
Cold misses are tuned by one thread at a time; cached calls are serialized too (the fix's cost).

Import it once, before any kernel is called (importing it again changes nothing).
"""

import threading

from triton.runtime import autotuner

_lock = threading.Lock()


def _apply(cls):
    if getattr(cls.run, "_fix", None) == "lock-run":  # imported before: wrap once
        return
    stock_run = cls.run

    def run(self, *args, **kwargs):
        with _lock:
            return stock_run(self, *args, **kwargs)

    run._fix = "lock-run"
    cls.run = run


_apply(autotuner.Autotuner)
