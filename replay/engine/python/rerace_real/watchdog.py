"""The Python side of the C++ watchdog's hang report.

rerace's watchdog ends a run that makes no progress; it signals SIGUSR1 first, and
faulthandler writes every thread's stack to descriptor 3, which the C++ side reads to say where
each thread is. The set-up process takes that descriptor at start (``take_descriptor``) and
answers the signal while it sets up; a run's child answers it for the run
(``stacks_on_signal``).
"""

import faulthandler
import os
import signal

_DUMP = [None]  # the file on descriptor 3, or None (started by hand)


def take_descriptor():
    """Takes descriptor 3, where the stacks are written, as the dump file (serve.main)."""
    try:
        _DUMP[0] = os.fdopen(os.dup(3), "w")
        os.close(3)
    except OSError:  # started by hand: no watchdog descriptor
        _DUMP[0] = None


def stacks_on_signal(on):
    """SIGUSR1 (the C++ watchdog) writes every thread's stack to the dump descriptor."""
    if _DUMP[0] is None:
        return
    if on:
        faulthandler.register(signal.SIGUSR1, file=_DUMP[0], all_threads=True)
    else:
        faulthandler.unregister(signal.SIGUSR1)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
