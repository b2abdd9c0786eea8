"""Patch reach, a property hidden by a subclass: ``nargs`` and ``restore_copies`` made
thread-local by properties on ``Autotuner`` (as the tls-state fix does), while the tuners'
class, a subclass put in ``Autotuner``'s place, keeps a class attribute ``nargs`` of its own,
which hides the property: every call reads and writes a shared ``nargs`` again. No profile
event shows it (nothing is called); the engine checks each replayed tuner's class."""
import threading

from triton.runtime import autotuner

_tls = threading.local()


def _get_nargs(self):
    return getattr(_tls, "nargs", None)


def _set_nargs(self, value):
    _tls.nargs = value


def _get_restore_copies(self):
    return getattr(_tls, "restore_copies", {})


def _set_restore_copies(self, value):
    _tls.restore_copies = value


autotuner.Autotuner.nargs = property(_get_nargs, _set_nargs)
autotuner.Autotuner.restore_copies = property(_get_restore_copies, _set_restore_copies)


class TeamAutotuner(autotuner.Autotuner):
    nargs = None  # a default the team's code relied on: hides the thread-local property


autotuner.Autotuner = TeamAutotuner
