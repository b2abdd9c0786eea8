"""Our fix: one lock around Triton's Autotuner.run, applied at start-up by the training script
(`import ourfix` before the model is built). Every call, tuning or cached, holds it."""
import threading

from triton.runtime import autotuner

_lock = threading.Lock()
_stock_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    with _lock:
        return _stock_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
