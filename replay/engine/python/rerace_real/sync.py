"""Controlled versions of threading's primitives.

``install()`` replaces ``threading.Lock``, ``RLock``, ``Condition``, ``Event``, ``Semaphore`` and
``BoundedSemaphore`` before the user's patch is imported, so the locks and events a patch
creates are these. Called from a logical thread of a replay run, every operation is a
scheduling point of rerace's scheduler (a lock acquisition that must wait blocks there, so a
deadlock is reported with what each thread waits for and who holds it). Called from any other
thread (the interpreter's own machinery, the child's main thread) they behave as the real
primitives they stand for.

Only objects created by the program's own code are controlled: the patches, Triton, FLA (the
files ``set_watched`` names). The interpreter's and the standard library's own locks (threading's
bookkeeping, logging, importlib) stay real: they are never held across a scheduling point.

Each object is named by where it was created and by whom (``Lock@patch.py:12#m.0``: the first
lock created at that line by the main thread), so that the same object has the same name in
every run: DPOR relies on it.

NB: a timed wait (``Event.wait(1.0)``) is modelled as a wait without a time-out: rerace's
scheduler has no wall clock. A run that would only end by a time-out is reported as a deadlock.
"""

import _thread
import sys
import threading

from . import control

_real = {
    "Lock": threading.Lock,
    "RLock": threading.RLock,
    "Condition": threading.Condition,
    "Event": threading.Event,
    "Semaphore": threading.Semaphore,
    "BoundedSemaphore": threading.BoundedSemaphore,
}
_counters = {}
_watched = [lambda filename: False]
MADE = []  # the controlled primitives made outside a run (set-up): reset.py puts back their state


def set_watched(predicate):
    """`predicate(filename)`: is a primitive created by code in that file controlled?"""
    _watched[0] = predicate


def _creator_watched():
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return f is not None and _watched[0](f.f_code.co_filename)


def _controlled_new(cls, kind):
    """__new__ of the controlled classes: a real primitive for code that is not watched."""

    def __new__(klass, *args, **kwargs):
        if not _creator_watched():
            return _real[kind](*args, **kwargs)
        obj = object.__new__(klass)
        if control.RUN is None:
            MADE.append(obj)
        return obj

    return staticmethod(__new__)


def _name(kind, depth=2):
    f = sys._getframe(depth)
    # Skip frames of this module (a Condition creating its RLock, say).
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    site = "?"
    if f is not None:
        # The file's name without os.path (a Python call the GIL tracer would see as the
        # program's: control.Unseen).
        site = "%s:%d" % (f.f_code.co_filename.rpartition("/")[2], f.f_lineno)
    ts = control.current()
    who = str(ts.tid) if ts is not None else "m"
    k = (kind, site, who)
    n = _counters.get(k, 0)
    _counters[k] = n + 1
    return "%s@%s#%s.%d" % (kind, site, who, n)


def _controlled():
    """Whether the caller is a logical thread of a run. The serial prewarm (thread -1, before
    the threads start, no scheduling points) uses the primitives as real ones: its controlled
    use sent the controller a lock operation it could not give back to any thread."""
    ts = control.current()
    return control.RUN is not None and ts is not None and ts.tid >= 0


class Lock:
    """threading.Lock under rerace's scheduler."""

    def __init__(self):
        self._name = _name("Lock")
        self._real = _thread.allocate_lock()
        self._owner = None  # logical thread holding it (controlled use)

    def acquire(self, blocking=True, timeout=-1):
        if not _controlled():
            return self._real.acquire(blocking, timeout)
        if not blocking:
            ok = bool(control.RUN.sync("t", self._name, "Lock.acquire(blocking=False)"))
        else:
            control.RUN.sync("a", self._name, "Lock.acquire")
            ok = True
        if ok:
            self._owner = control.current().tid
        return ok

    def release(self):
        if not _controlled():
            return self._real.release()
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._owner = None
        control.RUN.sync("u", self._name, "Lock.release")

    def locked(self):
        return self._owner is not None or self._real.locked()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()
        return False

    def _at_fork_reinit(self):
        self._real = _thread.allocate_lock()
        self._owner = None

    def __repr__(self):
        return "<rerace %s %s>" % (self._name, "locked" if self.locked() else "unlocked")


class RLock:
    """threading.RLock: an owner and a count over a controlled Lock."""

    def __init__(self):
        self._block = Lock()
        self._block._name = _name("RLock")
        self._owner = None
        self._count = 0

    def _me(self):
        ts = control.current()
        return ("t", ts.tid) if ts is not None else ("o", _thread.get_ident())

    def acquire(self, blocking=True, timeout=-1):
        me = self._me()
        if self._owner == me:
            self._count += 1
            return True
        if not self._block.acquire(blocking, timeout):
            return False
        self._owner = me
        self._count = 1
        return True

    __enter__ = acquire

    def release(self):
        if self._owner != self._me():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            self._owner = None
            self._block.release()

    def __exit__(self, *exc):
        self.release()
        return False

    def _is_owned(self):
        return self._owner == self._me()

    def _release_save(self):
        state = (self._owner, self._count)
        self._owner, self._count = None, 0
        return state

    def _acquire_restore(self, state):
        self._owner, self._count = state

    def _at_fork_reinit(self):
        self._block._at_fork_reinit()
        self._owner = None
        self._count = 0


class Condition:
    """threading.Condition over a controlled Lock or RLock."""

    def __init__(self, lock=None):
        self._name = _name("Condition")
        if lock is None:
            lock = RLock()
        self._lock = lock
        self.acquire = lock.acquire
        self.release = lock.release
        self._real = None  # uncontrolled use: a real Condition over the same real lock

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)

    def _base(self):
        return self._lock._block if isinstance(self._lock, RLock) else self._lock

    def _real_cond(self):
        if self._real is None:
            self._real = _real["Condition"](self._base()._real)
        return self._real

    def wait(self, timeout=None):
        if not _controlled():
            return self._real_cond().wait(timeout)
        base = self._base()
        saved = None
        if isinstance(self._lock, RLock):
            if not self._lock._is_owned():
                raise RuntimeError("cannot wait on un-acquired lock")
            saved = self._lock._release_save()
        elif base._owner is None:
            raise RuntimeError("cannot wait on un-acquired lock")
        base._owner = None
        control.RUN.sync("w", self._name, base._name, "Condition.wait")
        base._owner = control.current().tid
        if saved is not None:
            self._lock._acquire_restore(saved)
        return True

    def wait_for(self, predicate, timeout=None):
        result = predicate()
        while not result:
            self.wait(timeout)
            result = predicate()
        return result

    def notify(self, n=1):
        if not _controlled():
            return self._real_cond().notify(n)
        for _ in range(n):
            control.RUN.sync("n", self._name, 0, "Condition.notify")

    def notify_all(self):
        if not _controlled():
            return self._real_cond().notify_all()
        control.RUN.sync("n", self._name, 1, "Condition.notify_all")

    notifyAll = notify_all


class Event:
    """threading.Event: a flag under a Condition."""

    def __init__(self):
        self._cond = Condition(Lock())
        self._cond._name = _name("Event")
        self._flag = False

    def is_set(self):
        return self._flag

    isSet = is_set

    def set(self):
        with self._cond:
            self._flag = True
            self._cond.notify_all()

    def clear(self):
        with self._cond:
            self._flag = False

    def wait(self, timeout=None):
        with self._cond:
            signaled = self._flag
            if not signaled:
                signaled = self._cond.wait_for(lambda: self._flag, timeout)
            return signaled

    def _at_fork_reinit(self):
        self._cond = Condition(Lock())
        self._flag = False


class Semaphore:
    """threading.Semaphore: a counter under a Condition."""

    def __init__(self, value=1):
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._cond = Condition(Lock())
        self._cond._name = _name("Semaphore")
        self._value = value

    def acquire(self, blocking=True, timeout=None):
        with self._cond:
            while self._value == 0:
                if not blocking:
                    return False
                self._cond.wait(timeout)
            self._value -= 1
            return True

    __enter__ = acquire

    def release(self, n=1):
        with self._cond:
            self._value += n
            for _ in range(n):
                self._cond.notify()

    def __exit__(self, *exc):
        self.release()
        return False


class BoundedSemaphore(Semaphore):
    def __init__(self, value=1):
        Semaphore.__init__(self, value)
        self._initial = value

    def release(self, n=1):
        with self._cond:
            if self._value + n > self._initial:
                raise ValueError("Semaphore released too many times")
        Semaphore.release(self, n)


for _cls in (Lock, RLock, Condition, Event, Semaphore, BoundedSemaphore):
    _cls.__new__ = _controlled_new(_cls, _cls.__name__)


def install():
    """Replaces threading's primitives (before the user's patch is imported)."""
    threading.Lock = Lock
    threading.RLock = RLock
    threading.Condition = Condition
    threading.Event = Event
    threading.Semaphore = Semaphore
    threading.BoundedSemaphore = BoundedSemaphore
