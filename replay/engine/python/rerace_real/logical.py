"""Thread identity for logical threads that are greenlets.

When a replay run's logical threads are greenlets of one OS thread (control.GREENLET), the
program must still see one thread per logical thread, as it did on the GPU machine and as it
does when they are OS threads: ``threading.get_ident()``, ``threading.current_thread()`` and
``threading.local`` objects. ``install()`` (set-up, before Triton and the patches are
imported) puts in their place versions that answer for the logical thread running
(``control.current()``), and the real answer for any other thread (the child's main thread, the
serial prewarm, a thread the program starts itself, the set-up's probe threads):

* ``threading.get_ident()`` and ``get_native_id()``: a number per logical thread (the same in
  every run). They stand for builtin C calls: each call is told to the GIL tracer as the C call
  it replaces, at the caller's site, so that it is the same hand-over place as with OS threads;
* ``threading.current_thread()`` (not replaced: threading's own function, which looks the
  ident up in ``threading._active``): ``register`` puts a ``threading.Thread`` per logical
  thread there, named as recorded, alive until ``unregister``;
* ``threading.local``: a class whose instances keep one ``__dict__`` per logical thread (and
  per OS thread for the others, in a real ``_thread._local``); a subclass's ``__init__`` runs
  once in each thread that touches the object, with the arguments it was made with (again at
  the next touch if it raised); class attributes, properties and other descriptors are looked
  up as ``object`` does; it cannot be copied or pickled, as ``_thread._local`` cannot.

NB: C code that asks the interpreter for the thread (``PyThread_get_thread_ident``: a real
``RLock``'s owner, ``_thread._local`` made before ``install``, ``signal.signal``'s main-thread
check) sees the one OS thread. The primitives a program's own code creates are rerace's
(sync.py) and key by logical thread; a real ``RLock`` that other code holds across a
scheduling point is re-entered by another logical thread where an OS thread would wait (the
standard library's own are never held so: sync.py's note).

Threads: ``install`` once, from the set-up's main thread; the rest from any thread.
"""

import _thread
import sys
import threading
import weakref

from . import control

_IDENT_BASE = 0x7E5E0000  # logical thread t is ident _IDENT_BASE + t (never a pthread's address)
_NATIVE_BASE = 0x7E5E00   # and native id _NATIVE_BASE + t
_real_get_ident = _thread.get_ident
_real_get_native_id = getattr(_thread, "get_native_id", None)
_MISSING = object()
LOCALS = weakref.WeakSet()  # every local() alive (reset.py empties their threads' storage)


def _logical():
    ts = getattr(control._local, "ts", None)
    if ts is None or ts.tid < 0:
        return None
    return ts


def _as_c_call(ts, func):
    """Tells the GIL tracer of the builtin `func` called by our caller's caller, as the C call
    it would have seen with OS threads (this module's own frames are not the program's)."""
    run = control.RUN
    tracer = run.tracer if run is not None else None
    if tracer is None or not ts.traced:
        return
    f = sys._getframe(2)
    code = f.f_code
    if control.is_ours(code.co_filename):
        return
    tracer.c_returned(ts, code, f.f_lasti, func, None)


def get_ident():
    ts = _logical()
    if ts is None:
        return _real_get_ident()
    _as_c_call(ts, _real_get_ident)
    return _IDENT_BASE + ts.tid


def get_native_id():
    ts = _logical()
    if ts is None:
        return _real_get_native_id()
    _as_c_call(ts, _real_get_native_id)
    return _NATIVE_BASE + ts.tid


def make_thread(ts):
    """The ``threading.Thread`` logical thread `ts` is to the program (``ts.thread``): named as
    recorded, started, alive; not yet listed (``register``). Made once in the set-up process, so
    that every run's child (a fork) starts with a pristine copy instead of building it again."""
    t = threading.Thread(name=ts.name, daemon=True)
    t._ident = _IDENT_BASE + ts.tid
    t._native_id = _NATIVE_BASE + ts.tid
    alive = _thread.allocate_lock()  # held while it runs: is_alive() is True, as for a thread
    alive.acquire()
    t._tstate_lock = alive
    t._started.set()
    # threading's after-fork handler stops every Thread it knows of (threading._dangling holds
    # each one made) but the forking one, and every run's child is a fork of the set-up
    # process: off that list, the logical thread is alive in the child as the program's thread
    # was (and the child's fork costs less).
    dangling = getattr(threading, "_dangling", None)
    if dangling is not None:
        dangling.discard(t)
    ts.thread = t


def register(ts):
    """Logical thread `ts` is a live thread to ``threading`` (current_thread, enumerate)."""
    if ts.thread is None:
        make_thread(ts)
    threading._active[ts.thread._ident] = ts.thread


def unregister(ts):
    """Logical thread `ts` ended: no longer alive nor listed, as a finished thread."""
    t = ts.thread
    if t is None:
        return
    threading._active.pop(t._ident, None)
    t._is_stopped = True
    t._tstate_lock = None


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
        LOCALS.add(self)
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
        # A subclass's __getattr__, if any, is called by Python itself after this.
        raise AttributeError("%r object has no attribute %r" % (tp.__name__, name))

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle %r object" % type(self).__name__)

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
            raise AttributeError("%r object has no attribute %r" % (
                type(self).__name__, name)) from None


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
        try:
            type(self).__init__(self, *args, **kw)
        except BaseException:
            # As _thread._local: the thread's dict goes, and the next touch runs __init__ again.
            if ts is None:
                del real.d
            else:
                by_ts.pop(ts, None)
            raise
    return d


def install():
    """Puts the logical-thread versions in threading and _thread (set-up, once)."""
    threading.get_ident = get_ident
    _thread.get_ident = get_ident
    if _real_get_native_id is not None:
        threading.get_native_id = get_native_id
        _thread.get_native_id = get_native_id
    threading.local = local
