"""rerace's named fixes, as patch files: plain Python modules that monkeypatch
``triton.runtime.autotuner.Autotuner`` when imported, exactly as a training script would at
start-up. ``rerace check TRACE --fix NAME`` is ``--patch`` with the file below; read and copy them.

A serial prewarm is not a patch (a module imported at start-up cannot know the calls a program
will make): it is a change to the program, in rerace an option of the engine (each thread's
first tuner call made once, serially, before the concurrent part), and in the brief's
experiment ``autotune_race.py --prewarm``.

This package's ``__init__`` imports nothing: importing ``rerace_real.fixes`` patches nothing.
"""

import os

FIXES = {
    "lock-run": "lock_run.py",
    "tls-nargs": "tls_nargs.py",
    "tls-state": "tls_state.py",
    "lock-key-event": "lock_key_event.py",
}

#: Fixes that are not patches, and what stands for them.
NOT_PATCHES = {
    "prewarm": "a serial prewarm changes the program, not the tuner: an engine option "
               "(autotune_race.py --prewarm)",
}

DIR = os.path.dirname(os.path.abspath(__file__))


def path(name):
    """The patch file of fix ``name`` (KeyError, naming the known fixes, for others)."""
    try:
        return os.path.join(DIR, FIXES[name])
    except KeyError:
        why = NOT_PATCHES.get(name)
        raise KeyError("%s: %s" % (name, why) if why else
                       "unknown fix %r (known: %s)" % (name, ", ".join(sorted(FIXES)))) from None
