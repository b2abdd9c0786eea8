"""Patch reach, a patch applied to a class object the tuner does not use: the lock goes on
``Autotuner.run``, then the module is reloaded (as a plugin system or a notebook's
``importlib.reload`` does), so the tuners are built from the fresh, unpatched class."""
import importlib
import threading

from triton.runtime import autotuner

_lock = threading.Lock()
_stock_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    with _lock:
        return _stock_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
importlib.reload(autotuner)
