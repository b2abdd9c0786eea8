"""The program's own synchronization, as happens-before marks (issue 52).

``install(emit)`` wraps the standard library's primitives that order one thread after another,
so that a replay interleaves only what the program could interleave. Each operation that lets
another thread go on is a *release*, each return that waited for one an *acquire*, marked as

    rerace:sync kind=release what=Event obj=0x7f3a12 seq=0

``what`` names the primitive (the same on both sides of an edge), ``obj`` the object's id,
``seq`` what pairs a release with its acquire where the latest release is not it:

==================  =================================  ===================================  =====
what                release                            acquire                              pairs
==================  =================================  ===================================  =====
Thread.start        ``Thread.start()`` (the starter)   the started thread's first step      last
Thread.end          the thread's last step             ``Thread.join()`` returned, it ended last
Event               ``Event.set()``                    ``Event.wait()`` returned True       last
Queue               ``Queue.put()``'s item, k-th       ``Queue.get()`` of the k-th item     seq
Future              ``Future.set_result/exception``    ``Future.result/exception`` returned last
Executor.submit     ``ThreadPoolExecutor.submit()``    the work item starts in a worker     last
Barrier             ``Barrier.wait()`` arrives, gen g  ``Barrier.wait()`` of gen g returns  seq
==================  =================================  ===================================  =====

"last": an acquire follows the latest release of the same object before it; "seq": an acquire
follows the releases with its ``seq`` (a FIFO queue's k-th item; a barrier's generation: every
arrival of it). Each mark is made where the primitive's own lock orders it against its other
side (inside ``Event``'s condition, in ``Queue._put`` / ``_get`` under the queue's mutex,
before a thread starts), so the recorded order of a release and its acquire is the real one.

Not recorded (a replay may run as concurrent what they ordered; docs/RECORDER.md): ``Lock``,
``RLock``, ``Condition`` and ``Semaphore`` (mutual exclusion or counts, not an order between
two threads' steps; a fix's lock is replayed by running its code), ``LifoQueue`` /
``PriorityQueue`` (which put a get received is not known), ``queue.SimpleQueue`` and
``multiprocessing`` (C code), ``torch.distributed`` (other processes).

Bounded: after ``MAX_MARKS`` marks the probe makes one ``kind=overflow`` mark and no more; the
replay then treats the recording as one without synchronization.
"""

import threading

__all__ = ["install", "MAX_MARKS"]

MAX_MARKS = 200000

_state = {"emit": None, "marks": 0, "installed": False}
_count_lock = threading.Lock()


_guard = threading.local()


def _mark(kind, what, obj, seq=0):
    emit = _state["emit"]
    if emit is None or getattr(_guard, "on", False):
        return
    # Making a mark may use threading itself (current_thread() of a thread threading does not
    # know yet makes a _DummyThread, which sets an Event): those uses are not the program's.
    _guard.on = True
    try:
        _emit_mark(emit, kind, what, obj, seq)
    finally:
        _guard.on = False


def _emit_mark(emit, kind, what, obj, seq):
    _state["marks"] += 1  # racy by design: a bound, not a count
    n = _state["marks"]
    if n > MAX_MARKS:
        if n == MAX_MARKS + 1:
            emit("rerace:sync kind=overflow what=%s obj=0x0 seq=%d" % (what, MAX_MARKS))
        return
    emit("rerace:sync kind=%s what=%s obj=%#x seq=%d" % (kind, what, id(obj), seq))


def _patch_threads():
    T = threading.Thread
    orig_start, orig_join = T.start, T.join

    def start(self):
        if not getattr(self, "_rerace_sync", False):
            self._rerace_sync = True
            run = self.run

            def marked_run():
                _mark("acquire", "Thread.start", self)
                try:
                    return run()
                finally:
                    _mark("release", "Thread.end", self)

            self.run = marked_run
        # Thread's own handshake (start waits for the thread to set _started) is not the
        # program's order: the start edge stands for it.
        started = getattr(self, "_started", None)
        if started is not None:
            started._rerace_internal = True
        _mark("release", "Thread.start", self)
        return orig_start(self)

    def join(self, timeout=None):
        out = orig_join(self, timeout)
        if getattr(self, "_rerace_sync", False) and not self.is_alive():
            _mark("acquire", "Thread.end", self)
        return out

    T.start, T.join = start, join


def _patch_event():
    E = threading.Event

    # As threading.Event's own (CPython 3.8-3.13), with the marks under its condition's lock.
    def set(self):
        with self._cond:
            if not getattr(self, "_rerace_internal", False):
                _mark("release", "Event", self)
            self._flag = True
            self._cond.notify_all()

    def wait(self, timeout=None):
        with self._cond:
            signaled = self._flag
            if not signaled:
                signaled = self._cond.wait(timeout)
            if signaled and not getattr(self, "_rerace_internal", False):
                _mark("acquire", "Event", self)
            return signaled

    E.set, E.wait = set, wait


def _patch_queue():
    import queue

    Q = queue.Queue
    orig_put, orig_get = Q._put, Q._get

    # Under the queue's mutex (put and get call these holding it): the k-th item in is the k-th
    # out of a FIFO queue. Subclasses that order otherwise define their own and are not marked.
    def _put(self, item):
        n = getattr(self, "_rerace_puts", 0)
        self._rerace_puts = n + 1
        if type(self)._put is _put:
            _mark("release", "Queue", self, n)
        return orig_put(self, item)

    def _get(self):
        n = getattr(self, "_rerace_gets", 0)
        self._rerace_gets = n + 1
        if type(self)._get is _get:
            _mark("acquire", "Queue", self, n)
        return orig_get(self)

    Q._put, Q._get = _put, _get


def _patch_futures():
    from concurrent.futures import _base
    from concurrent.futures import thread as pool

    F = _base.Future
    orig_result, orig_exception = F.result, F.exception
    orig_set_result, orig_set_exception = F.set_result, F.set_exception

    def set_result(self, result):
        with self._condition:
            _mark("release", "Future", self)
            return orig_set_result(self, result)

    def set_exception(self, exception):
        with self._condition:
            _mark("release", "Future", self)
            return orig_set_exception(self, exception)

    def result(self, timeout=None):
        try:
            return orig_result(self, timeout)
        finally:
            if self.done() and not self.cancelled():
                _mark("acquire", "Future", self)

    def exception(self, timeout=None):
        try:
            return orig_exception(self, timeout)
        finally:
            if self.done() and not self.cancelled():
                _mark("acquire", "Future", self)

    F.set_result, F.set_exception = set_result, set_exception
    F.result, F.exception = result, exception

    W = getattr(pool, "_WorkItem", None)
    E = pool.ThreadPoolExecutor
    if W is None or not hasattr(W, "run"):
        return
    orig_submit, orig_run = E.submit, W.run

    def submit(self, fn, /, *args, **kwargs):
        # The work item is queued inside submit: its release is marked as it is made.
        _submitting.on = True
        try:
            return orig_submit(self, fn, *args, **kwargs)
        finally:
            _submitting.on = False

    def __init__(self, future, *args, **kwargs):
        orig_init(self, future, *args, **kwargs)
        if getattr(_submitting, "on", False):
            _mark("release", "Executor.submit", future)

    def run(self, *args, **kwargs):
        _mark("acquire", "Executor.submit", self.future)
        return orig_run(self, *args, **kwargs)

    orig_init = W.__init__
    E.submit, W.run, W.__init__ = submit, run, __init__


_submitting = threading.local()


def _patch_barrier():
    B = threading.Barrier
    orig_wait = B.wait

    def wait(self, timeout=None):
        with _count_lock:
            n = getattr(self, "_rerace_arrivals", 0)
            self._rerace_arrivals = n + 1
        gen = n // max(self.parties, 1)
        _mark("release", "Barrier", self, gen)
        out = orig_wait(self, timeout)
        _mark("acquire", "Barrier", self, gen)
        return out

    B.wait = wait


def install(emit):
    """Wraps the primitives (idempotent); `emit(text)` sends a mark (None: stop marking)."""
    _state["emit"] = emit
    if _state["installed"]:
        return
    _state["installed"] = True
    for patch in (_patch_threads, _patch_event, _patch_queue, _patch_futures, _patch_barrier):
        try:
            patch()
        except Exception:  # never break the recorded program; what is missing is not marked
            pass
