"""Thread identity for logical threads that are greenlets.

When a replay run's logical threads are greenlets of one OS thread (control.GREENLET), the
program must still see one thread per logical thread, as it did on the GPU machine and as it
does when they are OS threads: ``threading.get_ident()``, ``threading.current_thread()`` and
``threading.local`` objects. ``install()`` (set-up, before Triton and the patches are
imported) puts in their place versions that answer for the logical thread running
(``control.current()``), and the real answer for any other thread (the child's main thread, the
serial prewarm, a thread the program starts itself, the set-up's probe threads):

* ``get_ident()``: a number per logical thread (the same in every run);
* ``current_thread()``: a ``threading.Thread`` per logical thread, named as recorded, never
  started (``Thread(...).name``, ``.ident`` and its ``__dict__`` work);
* ``threading.local``: a class whose instances keep one ``__dict__`` per logical thread (and
  per OS thread for the others, in a real ``_thread._local``); a subclass's ``__init__`` runs
  once in each thread that touches the object, with the arguments it was made with; class
  attributes, properties and other descriptors are looked up as ``object`` does.

NB: C code that asks the interpreter for the thread (``PyThread_get_thread_ident``: a real
``RLock``'s owner, ``_thread._local`` made before ``install``) sees the one OS thread. The
primitives a program's own code creates are rerace's (sync.py) and key by logical thread; the
standard library's own are never held across a scheduling point (sync.py's note).

Threads: ``install`` once, from the set-up's main thread; the rest from any thread.
"""

import _thread
import threading

from . import control

_IDENT_BASE = 0x7E5E0000  # logical thread t is ident _IDENT_BASE + t (never a pthread's address)
_real_get_ident = _thread.get_ident
_real_current_thread = threading.current_thread
_MISSING = object()


def _logical():
    ts = getattr(control._local, "ts", None)
    if ts is None or ts.tid < 0:
        return None
    return ts


def get_ident():
    ts = _logical()
    return _real_get_ident() if ts is None else _IDENT_BASE + ts.tid


def current_thread():
    ts = _logical()
    if ts is None:
        return _real_current_thread()
    t = ts.thread
    if t is None:
        t = ts.thread = threading.Thread(name=ts.name, daemon=True)
        t._ident = _IDENT_BASE + ts.tid
    return t


def _lookup(tp, name):
    for klass in tp.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name]
    return _MISSING


class local:
    """threading.local for logical threads that are greenlets (module docstring)."""

    __slots__ = ("_rr_args", "_rr_by_ts", "_rr_os", "__weakref__")

    def __new__(cls, /, *args, **kw):
        if (args or kw) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        object.__setattr__(self, "_rr_args", (args, kw))
        object.__setattr__(self, "_rr_by_ts", {})
        object.__setattr__(self, "_rr_os", _thread._local())
        # The creating thread's dict is made here, and __init__ (called by the class call
        # after __new__) fills it, as with threading.local.
        _dict(self, False)
        return self

    def __getattribute__(self, name):
        d = _dict(self, True)
        if name == "__dict__":
            return d
        tp = type(self)
        attr = _lookup(tp, name)
        if attr is not _MISSING:
            kind = type(attr)
            get = getattr(kind, "__get__", None)
            if get is not None and (hasattr(kind, "__set__") or hasattr(kind, "__delete__")):
                return get(attr, self, tp)
        if name in d:
            return d[name]
        if attr is not _MISSING:
            get = getattr(type(attr), "__get__", None)
            return attr if get is None else get(attr, self, tp)
        fallback = _lookup(tp, "__getattr__")
        if fallback is not _MISSING:
            return fallback(self, name)
        raise AttributeError("%r object has no attribute %r" % (tp.__name__, name))

    def __setattr__(self, name, value):
        if name == "__dict__":
            raise AttributeError("%r object attribute '__dict__' is read-only" % type(self).__name__)
        d = _dict(self, True)
        attr = _lookup(type(self), name)
        if attr is not _MISSING:
            setter = getattr(type(attr), "__set__", None)
            if setter is not None:
                setter(attr, self, value)
                return
        d[name] = value

    def __delattr__(self, name):
        if name == "__dict__":
            raise AttributeError("%r object attribute '__dict__' is read-only" % type(self).__name__)
        d = _dict(self, True)
        attr = _lookup(type(self), name)
        if attr is not _MISSING:
            deleter = getattr(type(attr), "__delete__", None)
            if deleter is not None:
                deleter(attr, self)
                return
        try:
            del d[name]
        except KeyError:
            raise AttributeError(name) from None


def _dict(self, init):
    """The calling thread's dict of local `self`; made (and, when `init`, filled by the class's
    __init__ with the creation arguments) at the thread's first touch."""
    ts = _logical()
    if ts is None:
        real = object.__getattribute__(self, "_rr_os")
        d = getattr(real, "d", None)
        if d is not None:
            return d
        d = real.d = {}
    else:
        by_ts = object.__getattribute__(self, "_rr_by_ts")
        d = by_ts.get(ts)
        if d is not None:
            return d
        d = by_ts[ts] = {}
    if init:
        args, kw = object.__getattribute__(self, "_rr_args")
        type(self).__init__(self, *args, **kw)
    return d


def install():
    """Puts the logical-thread versions in threading and _thread (set-up, once)."""
    threading.get_ident = get_ident
    _thread.get_ident = get_ident
    threading.current_thread = current_thread
    threading.currentThread = current_thread
    threading.local = local
