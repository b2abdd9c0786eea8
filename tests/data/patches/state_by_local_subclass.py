"""A user's thread-local-state patch on a ``threading.local`` subclass: its ``__init__`` sets
each thread's defaults (run once per thread, at the thread's first touch), and the current
thread's name is checked against the one the thread was given. It holds exactly when every
logical thread gets its own ``__init__``-ed storage and its own ``current_thread()``."""
import threading

from triton.runtime import autotuner


class _State(threading.local):
    def __init__(self):
        self.nargs = None
        self.restore_copies = {}
        self.thread = threading.current_thread()


_state = _State()


def _mine():
    if _state.thread is not threading.current_thread():
        raise RuntimeError("thread-local storage of %s seen by %s" % (
            _state.thread.name, threading.current_thread().name))
    return _state


def _get_nargs(self):
    return _mine().nargs


def _set_nargs(self, value):
    _mine().nargs = value


def _get_restore_copies(self):
    return _mine().restore_copies


def _set_restore_copies(self, value):
    _mine().restore_copies = value


autotuner.Autotuner.nargs = property(_get_nargs, _set_nargs)
autotuner.Autotuner.restore_copies = property(_get_restore_copies, _set_restore_copies)
