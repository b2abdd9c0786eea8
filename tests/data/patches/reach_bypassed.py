"""Patch reach, the phantom patch as the incident's engineer suspected it: a library's subclass
took a reference to the original ``Autotuner.run`` before the patch and calls it, so the lock
(below) is in ``Autotuner.__dict__`` and never on the path. The subclass stands for FLA's
``CachedAutotuner``; it is put in ``Autotuner``'s place so that the engine's tuners use it."""
import threading

from triton.runtime import autotuner

_orig_run = autotuner.Autotuner.run


class TeamAutotuner(autotuner.Autotuner):
    def run(self, *args, **kwargs):
        return _orig_run(self, *args, **kwargs)


_lock = threading.Lock()


def run(self, *args, **kwargs):
    with _lock:
        return _orig_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
autotuner.Autotuner = TeamAutotuner
