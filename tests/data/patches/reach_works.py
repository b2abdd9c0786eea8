"""Patch reach, a patch that works: a lock around Autotuner.run, on the path of every call."""
import threading

from triton.runtime import autotuner

_lock = threading.Lock()
_stock_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    with _lock:
        return _stock_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
