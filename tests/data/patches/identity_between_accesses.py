"""A patch that asks for the thread's identity between two reads of a tuner field, in code
the engine watches: ``threading.get_ident()`` (a builtin C call with OS threads) and
``threading.current_thread()`` (threading's own function). Whether the GIL can change hands
there is CPython's answer for those calls; the engine's logical threads must give the same
steps whether they are OS threads or greenlets (logical.py tells the tracer of the C call that
its get_ident stands for)."""
import threading

from triton.runtime import autotuner

_run = autotuner.Autotuner.run


def run(self, *args, **kwargs):
    before = self.cache
    threading.get_ident()
    after = self.cache
    threading.current_thread()
    again = self.cache
    del before, after, again
    return _run(self, *args, **kwargs)


autotuner.Autotuner.run = run
