"""Patch reach, a lock applied where FLA's path does not pass: the patch reloads Triton's
autotuner module (as a plugin system or a notebook's ``importlib.reload`` does) and then puts
its lock on the fresh class's ``run``. FLA's ``CachedAutotuner`` was defined, at FLA's import,
over the class object from before the reload: its ``super().run()`` reaches that class's
``run``, which the patch never touched."""
import importlib
import threading

from triton.runtime import autotuner

importlib.reload(autotuner)

_lock = threading.Lock()
_stock_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    with _lock:
        return _stock_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
