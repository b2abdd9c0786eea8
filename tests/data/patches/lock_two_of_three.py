"""A patch that serializes two threads and lets the others through: the first two threads to
call Autotuner.run take a lock around it, any later thread runs it unlocked. Every sub-program
of two threads holds; one of three fails (check --threads 3), and so does the whole step."""
import threading

from triton.runtime import autotuner

_lock = threading.Lock()
_locked = set()
_stock_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    me = threading.get_ident()
    if me not in _locked and len(_locked) < 2:
        _locked.add(me)
    if me in _locked:
        with _lock:
            return _stock_run(self, *args, **kwargs)
    return _stock_run(self, *args, **kwargs)


autotuner.Autotuner.run = run
