"""Patch reach, a part of a patch the recording never uses: a lock around ``Autotuner.run``
(entered by every call) and a replacement of ``Autotuner.warmup``, which no replayed call runs
(the recording has no warm-up). The unused part is not "the patch never ran": the verdict stays
the lock's, and a reach line says the warm-up part was not on these calls' path."""
import threading

from triton.runtime import autotuner

_orig_run = autotuner.Autotuner.run
_orig_warmup = autotuner.Autotuner.warmup
_lock = threading.Lock()


def run(self, *args, **kwargs):
    with _lock:
        return _orig_run(self, *args, **kwargs)


def warmup(self, *args, **kwargs):
    with _lock:
        return _orig_warmup(self, *args, **kwargs)


autotuner.Autotuner.run = run
autotuner.Autotuner.warmup = warmup
