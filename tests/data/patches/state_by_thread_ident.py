"""A user's thread-local-state patch keyed by thread identity: ``nargs`` and ``restore_copies``
kept in a dict keyed by (tuner, ``threading.get_ident()``), as code written before
``threading.local`` was in fashion does. It holds exactly when every thread has its own ident:
the engine's logical threads must each get one, whether they are OS threads or greenlets."""
import threading

from triton.runtime import autotuner

_state = {}


def _mine(self):
    return _state.setdefault((id(self), threading.get_ident()), {})


def _get_nargs(self):
    return _mine(self).get("nargs")


def _set_nargs(self, value):
    _mine(self)["nargs"] = value


def _get_restore_copies(self):
    return _mine(self).get("restore_copies", {})


def _set_restore_copies(self, value):
    _mine(self)["restore_copies"] = value


autotuner.Autotuner.nargs = property(_get_nargs, _set_nargs)
autotuner.Autotuner.restore_copies = property(_get_restore_copies, _set_restore_copies)
