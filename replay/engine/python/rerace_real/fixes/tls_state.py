"""Fix `tls-state`: ``Autotuner.nargs`` and ``Autotuner.restore_copies`` thread-local by property.

Stands for the thread-local-state patches (in the spirit of triton PR 11509, "isolates execution
state to thread-local storage"): both per-call fields live in per-instance, per-thread storage,
so neither ``self.nargs = None`` nor the post-hook's ``self.restore_copies = {}`` of one thread
reaches another. ``cache``, ``best_config``, ``configs_timings`` and ``bench_time`` stay shared:
threads that miss the same key at once each tune it (duplicate tuning), and the last writer's
choice stays in the cache.

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


def _get_restore_copies(self):
    return getattr(_local(self), "restore_copies", {})


_get_restore_copies._fix = "tls-state"


def _set_restore_copies(self, value):
    _local(self).restore_copies = value


def _apply(cls):
    current = vars(cls).get("restore_copies")
    if isinstance(current, property) and getattr(current.fget, "_fix", None) == "tls-state":
        return  # imported before
    cls.nargs = property(_get_nargs, _set_nargs)
    cls.restore_copies = property(_get_restore_copies, _set_restore_copies)


_apply(autotuner.Autotuner)
