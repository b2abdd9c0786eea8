"""Fix `tls-nargs`: ``Autotuner.nargs`` made thread-local by a ``property``.

Stands for the monkey-patch proposed in triton-lang/triton issue 11494 (ExLlamaV3): rebind
``Autotuner.nargs`` to per-instance, per-thread storage, so one thread's ``self.nargs = None``
at the end of ``run`` no longer empties another thread's ``nargs`` while it benchmarks.
``restore_copies``, ``cache``, ``best_config`` and the other fields stay shared, which is why
this fix is not complete: a post-hook can still find ``restore_copies`` reset to ``{}`` by
another thread (``KeyError: 'y_ptr'`` on Triton 3.6).

Import it once, before any kernel is called (importing it again changes nothing).
"""

import threading

from triton.runtime import autotuner


def _local(tuner):
    """This tuner's thread-local storage (one ``threading.local`` per tuner)."""
    d = vars(tuner)
    tls = d.get("_fix_tls")
    if tls is None:
        tls = d.setdefault("_fix_tls", threading.local())  # atomic: one winner
    return tls


def _get_nargs(self):
    return getattr(_local(self), "nargs", None)


def _set_nargs(self, value):
    _local(self).nargs = value


_get_nargs._fix = "tls-nargs"


def _apply(cls):
    current = vars(cls).get("nargs")
    if isinstance(current, property) and getattr(current.fget, "_fix", None) == "tls-nargs":
        return  # imported before
    cls.nargs = property(_get_nargs, _set_nargs)


_apply(autotuner.Autotuner)
