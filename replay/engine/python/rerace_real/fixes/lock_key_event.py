"""Fix `lock-key-event`: a lock plus a per-key ``threading.Event`` around ``Autotuner.run``.

Stands for the design of triton PR 8437 ("global locks + per key future"): the first thread to
miss a key in ``self.cache`` becomes its owner and runs ``Autotuner.run`` (tuning the key);
threads that miss the same key meanwhile wait on the key's event; once it is set, everyone
calls ``Autotuner.run`` and finds the key cached. Threads that find the key cached go straight
in. ``self.nargs`` stays a shared field: a cached call still writes it at its start and sets it
to ``None`` at its end, concurrently with other threads' calls.

If the owner's call raises, the event is set all the same and a waiter becomes the next owner.
Import it once, before any kernel is called (importing it again changes nothing).
"""

import threading

from triton.runtime import autotuner

_lock = threading.Lock()


def _key(tuner, args, kwargs):
    """The tuning key, as Autotuner.run computes it (Triton 3.6, autotuner.py:215-222)."""
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    _args = {k: v for (k, v) in all_args.items() if k in tuner.arg_names}
    key = [_args[k] for k in tuner.keys if k in _args]
    for arg in _args.values():
        if hasattr(arg, "dtype"):
            key.append(str(arg.dtype))
    return tuple(key)


def _apply(cls):
    if getattr(cls.run, "_fix", None) == "lock-key-event":  # imported before: wrap once
        return
    stock_run = cls.run

    def run(self, *args, **kwargs):
        if len(self.configs) <= 1:
            return stock_run(self, *args, **kwargs)
        key = _key(self, args, kwargs)
        while True:
            with _lock:
                if key in self.cache:
                    owner = False
                    break
                events = vars(self).setdefault("_fix_key_events", {})
                event = events.get(key)
                if event is None:  # the first to miss the key: this thread tunes it
                    event = events[key] = threading.Event()
                    owner = True
                    break
            event.wait()  # another thread tunes this key; then look again
        if not owner:
            return stock_run(self, *args, **kwargs)
        try:
            return stock_run(self, *args, **kwargs)
        finally:
            with _lock:
                del self._fix_key_events[key]
            event.set()

    run._fix = "lock-key-event"
    cls.run = run


_apply(autotuner.Autotuner)
