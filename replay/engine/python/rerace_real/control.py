"""The scheduling points of a replay run, and the baton that lets one thread run at a time.

One ``Run`` exists per replay run, in the forked child (``child.py``). Each logical thread is a
real Python thread holding a ``Turn`` (a raw ``_thread`` lock used as a baton). A thread that
reaches a point writes one message to the controller and then reads the controller's next
command itself (only one thread runs, so only one thread reads): ``g <tid> <step> <value>
<plan>`` hands the turn to ``tid`` (releasing its baton and blocking on its own), ``e`` ends
the run (the child exits at once: the C++ side has what it needs). ``plan`` is the picks of the
next points that the strategy has already made (``Strategy::Plan``: a random walk's next draws,
a systematic search's fixed prefix and no preemption after it, a saved schedule's next entries,
PCT's highest-priority thread until its next change point), as ``tid:count`` runs separated by
commas, or empty: each of those ``p`` is posted, not sent, counts as one step, and hands the
turn to the planned thread directly (or keeps it) without waiting for a command. Both sides
take the same picks (the C++ side checks each when the scheduler makes it), and any other
message that waits ends the plan. The controller plans only threads that wait at a point (or
have not started), never one inside a lock operation: that one needs its command's value.

Messages the controller does not answer (``m``, ``v``, ``f``, ``r``) are kept (``Run.post``) and
written with the next message it answers (or ``x``, after which the finished thread reads the
next command), in order, in one write (``Run.send``).
Only the thread holding the turn posts; posted messages stay pending across a planned hand-over
(one list, in the order they were made) and go with the next message sent; ``!`` and the
child's other ways out write what is pending first (``Run.flush``), so the controller sees
every message in the order it was made.

Messages to the controller (tab-separated):
    p  <access r|w|y> <object> <label>     a point: the access is made when picked
    m  <access r|w> <object> <label>       an access inside the current step (GIL mode: no
                                           hand-over place since the last point; no reply)
    a  <lock> <label>                      acquire a lock (blocks in the scheduler)
    t  <lock> <label>                      try to acquire; the reply's value is 1 or 0
    u  <lock> <label>                      release
    w  <cv> <lock> <label>                 wait on a condition (releases the lock)
    n  <cv> <0|1 all> <label>              notify
    v  <nanoseconds>                       advance this thread's virtual clock (no reply)
    f  <json>                              a finding of this thread (no reply)
    r  <json>                              after each tuner call: the patch replacements it
                                           entered and its bypasses (reach.py; no reply)
    x                                      this thread has finished (no reply)
    !  <message>                           an internal error of the engine
and from the set-up process, after a run's child ended:
    q  <message>                           the program ended the child in the middle of the run
                                           (an exit status that is not rerace's: serve.py)

Logical threads are OS threads handing a baton over, or, where the greenlet package imports
(CPython 3.12+, ``engine_setup.Setup``), greenlets of the child's main thread that switch to
each other without the kernel (``GREENLET``; ``RERACE_ENGINE_THREADS=os`` keeps OS threads):
the same points, commands and reports (``logical.py`` gives them their own identity and
``threading.local``, as OS threads have).

In GIL mode the GIL tracer (``gil_tracer.py``) says which accesses are points: those after a
place where the interpreter could hand the GIL over.

Threads: everything here is called by the logical thread that holds the turn, except
``Run.start`` and ``Run.finish`` (the child's main thread, before and after).
"""

import _thread
import json
import os
import sys
import threading

# Re-exported: the other modules and the tests ask control for these.
from .source_files import _ours_cache, is_ours, site_path  # noqa: F401

R, W, Y = "r", "w", "y"

_local = threading.local()
GREENLET = None  # the greenlet module when logical threads are greenlets (engine_setup.py)
_REINSTALL = sys.version_info >= (3, 12)
_DEBUG = bool(os.environ.get("RERACE_ENGINE_DEBUG"))


def current():
    """The ThreadState of the calling logical thread, or None (any other thread)."""
    return getattr(_local, "ts", None)


class ThreadState:
    __slots__ = ("tid", "name", "baton", "value", "opportunity", "quiet", "call", "bench", "seen",
                 "pending_call", "muted", "traced", "glet", "thread")

    def __init__(self, tid, name):
        self.tid = tid
        self.name = name
        self.glet = None   # its greenlet (GREENLET), else an OS thread waits on its baton
        self.thread = None  # the threading.Thread it is to the program (logical.py)
        if GREENLET is None:
            self.baton = _thread.allocate_lock()
            self.baton.acquire()
        self.value = 0
        self.opportunity = True  # the first access of a thread is always a point
        self.quiet = 0           # > 0: inside rerace's own code: no points, no opportunities
        self.call = None         # the recorded call being replayed (fakes.py)
        self.bench = None        # (tuner, config index) while do_bench runs a config
        self.seen = set()        # silent findings already reported (the first of each kind)
        self.pending_call = None  # the frame of a CALL whose callee the tracer has not seen
        self.muted = []           # frames whose opcode events are off until the next point
        self.traced = True        # False once the GIL tracer has stopped for this thread

    def new_step(self):
        """At a scheduling point: no hand-over place passed yet; the tracer looks again."""
        self.opportunity = False
        self.pending_call = None
        if self.muted:
            for f in self.muted:
                f.f_trace_opcodes = True
            self.muted.clear()
            if _REINSTALL:
                # 3.12+: settrace runs on sys.monitoring; a frame's opcode events come back only
                # once the tracer is installed again (docs/GIL.md).
                t = sys.gettrace()
                if t is not None:
                    sys.settrace(t)


_TOKEN = [""]


def set_token(token):
    """The session token every line to the C++ side starts with (serve.py's framing)."""
    _TOKEN[0] = str(token)


def frame(line):
    """`line` as sent: the session token, a space, the line, a newline."""
    return "%s %s\n" % (_TOKEN[0], line) if _TOKEN[0] else line + "\n"


def _clean(text):
    return str(text).replace("\t", " ").replace("\n", " ")


_POST_LIMIT = 128  # posted messages written at the latest when this many are pending


class Run:
    """One replay run in the child: the threads, the channel, the mode."""

    def __init__(self, rfd, wfd, free_threaded, rules):
        self.rfd = rfd
        self.wfd = wfd
        self.free_threaded = free_threaded
        self.rules = rules
        self.threads = []
        self.step = 0
        # The picks of the next points, already made by the strategy (the "g" that gave the
        # turn sent them; python_engine.cc takes the same): the "tid:count" runs not begun yet,
        # the next last, read when begun (a plan is often cut short by a lock or a thread's
        # end); plan_tid is the run begun, with plan_left picks left in it. Each point posts
        # its access, is one step, and runs the planned thread.
        self.plan = []
        self.plan_tid = 0
        self.plan_left = 0
        self.buf = b""
        self.out = []          # framed lines posted, not yet written (post, flush)
        self.last_write = {}   # object -> (thread, step): for rerace's words in findings
        self.findings = 0
        self.tracer = None     # the GIL tracer (child.py sets it; None free-threaded)
        self.threads_done = 0  # logical threads that ended (sent x)
        # Where "e" returns to when runs share the process (child.serve_here): the main
        # greenlet, or with OS threads the main thread's ident (which waits on `ended`); None:
        # "e" ends the process.
        self.main = None
        self.ended = None

    # ---- channel ----
    # NB: every Python call made here fires the GIL tracer's profile events (sys.setprofile):
    # the hot paths below make few calls (no generators, no helpers per field).
    def _line(self, fields):
        parts = []
        for f in fields:
            f = f if type(f) is str else str(f)
            if "\t" in f or "\n" in f:
                f = f.replace("\t", " ").replace("\n", " ")
            parts.append(f)
        line = frame("\t".join(parts))
        if _DEBUG:
            os.write(2, ("py> [%s] %s" % (threading.current_thread().name, line)).encode())
        return line

    def post(self, *fields):
        """A message the controller does not answer: written with the next one it answers."""
        self.out.append(self._line(fields))
        if len(self.out) >= _POST_LIMIT:
            self.flush()

    def send(self, *fields):
        """A message, written together with every message posted before it (one write)."""
        self.out.append(self._line(fields))
        self.flush()

    def flush(self):
        """Writes what is pending."""
        if not self.out:
            return
        data = "".join(self.out).encode("utf-8", "backslashreplace")
        self.out.clear()
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]

    def _readline(self):
        while b"\n" not in self.buf:
            chunk = os.read(self.rfd, 65536)
            if not chunk:
                os._exit(3)  # the controller is gone
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        if _DEBUG:
            os.write(2, ("py< [%s] %s\n" % (threading.current_thread().name, line.decode())).encode())
        return line.decode("utf-8")

    def _command(self):
        """Reads one command; returns the ThreadState to run, after setting its value."""
        line = self._readline()
        parts = line.split("\t")
        if parts[0] == "e":
            self.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            if self.main is None:
                os._exit(0)
            if GREENLET is not None:
                if GREENLET.getcurrent() is not self.main:
                    self.main.switch()  # never back: the run is over (child.serve_here)
                raise RunEnded()
            # OS threads: the main thread waits for this (child._run_threads_here). A thread
            # at its end (every thread ended) or the main thread returns; one in the middle of
            # the program stays here, as it would in a fork, until the process exits.
            self.ended.release()
            if _thread.get_ident() == self.main or self.threads_done == len(self.threads):
                raise RunEnded()
            never = _thread.allocate_lock()
            never.acquire()
            never.acquire()
        if parts[0] != "g" or len(parts) < 3:
            self.send("!", "unexpected command from the controller: %r" % line)
            os._exit(4)
        ts = self.threads[int(parts[1])]
        self.step = int(parts[2])
        ts.value = int(parts[3]) if len(parts) > 3 else 0
        self.plan_left = 0
        if len(parts) > 4 and parts[4]:
            plan = self.plan = parts[4].split(",")
            plan.reverse()
        else:
            self.plan = []
        return ts

    def _next_planned(self):
        """Begins the plan's next run (there is one): its thread, with its count."""
        run = self.plan.pop()
        tid, _, count = run.partition(":")
        try:
            tid, count = int(tid), int(count)
        except ValueError:
            tid = count = -1
        if not 0 <= tid < len(self.threads) or count <= 0:
            self.send("!", "a plan the child cannot follow from the controller: %r" % run)
            os._exit(4)
        self.plan_tid = tid
        self.plan_left = count

    def wait_turn(self, me):
        """After a message that the controller answers: read commands until it is `me`'s turn."""
        nxt = self._command()
        if nxt is me:
            return me.value
        if GREENLET is not None:
            _local.ts = nxt
            nxt.glet.switch()  # back when a thread switches to `me`, having set _local.ts
            return me.value
        nxt.baton.release()
        me.baton.acquire()
        return me.value

    def hand_on(self):
        """The caller (a finished thread, or the main thread at the start) gives the turn away.
        With greenlets it does not come back (the run ends in a logical thread: ``e``)."""
        nxt = self._command()
        if GREENLET is not None:
            _local.ts = nxt
            nxt.glet.switch()
            return
        nxt.baton.release()

    # ---- points ----
    def access(self, kind, obj, label):
        ts = getattr(_local, "ts", None)  # current(), without a call (see _line)
        if ts is None or ts.quiet:
            return
        if not self.free_threaded and not ts.opportunity:
            # Part of the thread's current atomic step: no choice, but still an access, so
            # that DPOR, --races and the thread's history see every object the step touches.
            self.post("m", kind, obj, label)
            if kind == W:
                # Part of the step the thread is taking: the timeline shows that step as its
                # first access, not this write; the words say so (_at_step).
                self.last_write[obj] = (ts.tid, self.step, True)
            return
        ts.new_step()
        if self.plan_left or self.plan:
            # Already picked by the strategy: one step on, no round trip.
            if not self.plan_left:
                self._next_planned()
            self.plan_left -= 1
            nxt = self.threads[self.plan_tid]
            self.step += 1
            self.post("p", kind, obj, label)
            if nxt is not ts:
                # The planned thread waits at a point (or has not started): it goes on from
                # there, and this one when a command or a plan picks it again.
                nxt.value = 0
                if GREENLET is not None:
                    _local.ts = nxt
                    nxt.glet.switch()
                else:
                    nxt.baton.release()
                    ts.baton.acquire()
        else:
            self.send("p", kind, obj, label)
            self.wait_turn(ts)
        if kind == W:
            self.last_write[obj] = (ts.tid, self.step, False)

    def sync(self, op, *fields):
        """A lock/condition operation; returns the controller's value (try-acquire: 1 or 0)."""
        ts = current()
        self.send(op, *fields)
        v = self.wait_turn(ts)
        ts.new_step()
        return v

    def advance(self, ns):
        if ns > 0:
            self.post("v", int(ns))

    def opportunity(self):
        """A place where the interpreter could hand the GIL over (a blocking C call, say)."""
        ts = current()
        if ts is not None and not ts.quiet:
            ts.opportunity = True

    def finding(self, **f):
        ts = current()
        f.setdefault("thread", ts.tid if ts else -1)
        self.findings += 1
        with Unseen():
            self.post("f", json.dumps(f, sort_keys=True))

    def last_write_of(self, field):
        """' (<field> last written by thread T at step S)' for rerace's words, or ''."""
        tid, step, merged = self._last(field)
        if tid < 0:
            return ""
        return " (%s last written by thread %d %s)" % (field, tid, at_step(step, merged))

    def last_writer(self, field):
        """(thread, step, words): the last write of `field`, "at step S" as the words cite it."""
        tid, step, merged = self._last(field)
        return tid, step, at_step(step, merged)

    def _last(self, field):
        best = (-1, -1, False)
        for obj, (tid, step, merged) in self.last_write.items():
            if obj.endswith("." + field) or obj.endswith("." + field + "{}"):
                if step > best[1]:
                    best = (tid, step, merged)
        return best

    def internal(self, message):
        self.send("!", message)
        os._exit(5)


def at_step(step, merged):
    """Where a write is on the timeline: "at step S", or, for a write the GIL merged into the
    step of an earlier access of its thread (no switch point between), that step named so."""
    if merged:
        return "in step %d (after the access the timeline shows there, with no switch point " \
               "between)" % step
    return "at step %d" % step


RUN = None  # the Run of this process (set in the child)


class RunEnded(Exception):
    """``e`` read by the main greenlet of a process whose runs share it (child.serve_here)."""


class Quiet:
    """`with Quiet():` rerace's own code inside a logical thread: no points, no opportunities."""

    __slots__ = ("ts",)

    def __enter__(self):
        self.ts = current()
        if self.ts is not None:
            self.ts.quiet += 1

    def __exit__(self, *exc):
        if self.ts is not None:
            self.ts.quiet -= 1
        return False


class Unseen:
    """`with Unseen():` rerace's own bookkeeping inside a logical thread that runs Python code
    outside rerace_real (the standard library's json encoding a finding or a patch-reach
    report): no point, no opportunity, no access, and no execution counted, as if the program
    had not run it (it did not: without this, a report's last steps showed `gil-warmup
    encoder.py:192` writes of rerace's own JSON, and DPOR ordered them)."""

    __slots__ = ("ts", "traced")

    def __enter__(self):
        ts = self.ts = getattr(_local, "ts", None)
        if ts is not None:
            ts.quiet += 1
            self.traced = ts.traced
            ts.traced = False

    def __exit__(self, *exc):
        ts = self.ts
        if ts is not None:
            ts.quiet -= 1
            ts.traced = self.traced
        return False


# The GIL tracer is gil_tracer.py's: it reads this module's RUN and _local, so it imports this
# module, not the other way round. Its names stay importable from here (the tests,
# tools/scripts/engine-floor.py), looked up when first asked for.
_GIL_TRACER_NAMES = frozenset(["Tracer", "MonitoringTracer", "make_tracer", "opnames_of"])


def __getattr__(name):
    if name in _GIL_TRACER_NAMES:
        from . import gil_tracer
        return getattr(gil_tracer, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
