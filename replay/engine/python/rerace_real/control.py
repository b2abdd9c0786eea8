"""The scheduling points of a replay run, and the baton that lets one thread run at a time.

One ``Run`` exists per replay run, in the forked child (``serve.py``). Each logical thread is a
real Python thread holding a ``Turn`` (a raw ``_thread`` lock used as a baton). A thread that
reaches a point writes one message to the controller and then reads the controller's next
command itself (only one thread runs, so only one thread reads): ``g <tid> <step> <value>
<credit>`` hands the turn to ``tid`` (releasing its baton and blocking on its own), ``e`` ends
the run (the child exits at once: the C++ side has what it needs). ``credit`` is how many of
``tid``'s next points the strategy has already given it (``Strategy::Promised``: a systematic
search's fixed prefix, and no preemption after it; a saved schedule's next entries; PCT's
highest-priority thread until its next change point): each of
those ``p`` is posted, not sent, and counts as one step without waiting for a command; both
sides count the same points, and any other message that waits ends the credit.

Messages the controller does not answer (``m``, ``v``, ``f``, ``r``) are kept (``Run.post``) and
written with the next message it answers (or ``x``, after which the finished thread reads the
next command), in order, in one write (``Run.send``).
Only the thread holding the turn posts, and it sends before it gives the turn away, so nothing
is pending at a hand-over; ``!`` and the child's other ways out write what is pending first
(``Run.flush``), so the controller sees every message in the order it was made.

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
(CPython 3.12+, ``serve.Setup``), greenlets of the child's main thread that switch to each
other without the kernel (``GREENLET``; ``RERACE_ENGINE_THREADS=os`` keeps OS threads): the
same points, commands and reports (``logical.py`` gives them their own identity and
``threading.local``, as OS threads have).

Threads: everything here is called by the logical thread that holds the turn, except
``Run.start`` and ``Run.finish`` (the child's main thread, before and after).
"""

import _thread
import json
import os
import sys
import threading

R, W, Y = "r", "w", "y"

_local = threading.local()
GREENLET = None  # the greenlet module when logical threads are greenlets (serve.py sets it)
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
        # Points the running thread may pass without waiting: the strategy's picks that the
        # controller already knows to be this thread (the "g" that gave it the turn says how
        # many; python_engine.cc counts the same points). Each is posted, and is one step.
        self.credit = 0
        self.buf = b""
        self.out = []          # framed lines posted, not yet written (post, flush)
        self.last_write = {}   # object -> (thread, step): for rerace's words in findings
        self.findings = 0
        self.tracer = None     # the GIL tracer (serve.py sets it; None free-threaded)

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
            os._exit(0)
        if parts[0] != "g" or len(parts) < 3:
            self.send("!", "unexpected command from the controller: %r" % line)
            os._exit(4)
        ts = self.threads[int(parts[1])]
        self.step = int(parts[2])
        ts.value = int(parts[3]) if len(parts) > 3 else 0
        self.credit = int(parts[4]) if len(parts) > 4 else 0
        return ts

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
        if self.credit:
            # Already picked by the strategy: one step on, no round trip.
            self.credit -= 1
            self.step += 1
            self.post("p", kind, obj, label)
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


# ---- GIL opportunities: where the running interpreter could switch threads ----

_ours = os.path.dirname(os.path.realpath(__file__))
_ours_cache = {}


def _short(filename):
    """A file's name as reports show it: from site-packages/ or triton/ on, else its base name."""
    cut = filename.rfind("site-packages/")
    if cut >= 0:
        return filename[cut + len("site-packages/"):]
    return filename.rpartition("/")[2]  # os.path.basename without a Python call (see Unseen)


def is_ours(filename):
    """Is `filename` rerace's own engine code (however the path that imported it is spelled)?"""
    r = _ours_cache.get(filename)
    if r is None:
        r = _ours_cache[filename] = os.path.realpath(filename).startswith(_ours + os.sep)
    return r


def site_path(path):
    """A source file as every report names it: from its package down ("triton/runtime/
    autotuner.py", wherever that Triton is installed: site-packages or a PYTHONPATH folder),
    else the file's name."""
    cut = path.rfind("site-packages/")
    if cut >= 0:
        return path[cut + len("site-packages/"):]
    for package in ("triton/", "fla/"):
        cut = path.rfind("/" + package)
        if cut >= 0:
            return path[cut + 1:]
        if path.startswith(package):
            return path
    return path.rpartition("/")[2]  # os.path.basename without a Python call (see Unseen)


def _inline_caches():
    """CPython 3.11/3.12: the number of inline cache entries after each opcode (a list of 256),
    else None (other versions: opnames_of asks dis)."""
    import dis
    import opcode
    caches = getattr(opcode, "_inline_cache_entries", None)
    if sys.version_info[:2] not in ((3, 11), (3, 12)) or not isinstance(caches, list) or \
            len(caches) != 256 or len(dis.opname) < 256:
        return None
    return caches


_CACHES = _inline_caches()


def opnames_of(code):
    """{offset: opname} of `code`'s instructions, as ``dis.get_instructions`` names them (the
    original, unspecialized instructions; EXTENDED_ARG included, inline caches not).

    NB: dis builds a full Instruction per instruction (line numbers, argument values) and the
    tracer needs this for every code object a run enters, in every run's child: on 3.11/3.12
    the bytes are read directly (tests/python/test_engine.py checks it against dis)."""
    import dis
    if _CACHES is None:
        return {ins.offset: ins.opname for ins in dis.get_instructions(code)}
    names = dis.opname
    raw = code.co_code
    ops = {}
    i, n = 0, len(raw)
    while i < n:
        op = raw[i]
        ops[i] = names[op]
        i += 2 + 2 * _CACHES[op]
    return ops


_CALL_OPS = frozenset([
    "CALL", "CALL_KW", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD",
])


class Tracer:
    """sys.settrace / sys.setprofile functions that mark GIL hand-over opportunities.

    `watched(filename)` says which code runs with per-instruction events (the tuner's module,
    FLA's, the user's patches): there each instruction is checked against the version's rules.
    Elsewhere only function entry (an eval-breaker check in every supported version) counts.
    Execution counts per C-call site decide whether the call is still unspecialized (counts
    are per process, as CPython's specialization lives in the shared code object; a serial
    prewarm counts too). Once a step has passed a hand-over place nothing else in it matters:
    its frames' opcode events are switched off until the next point (ThreadState.new_step).

    A CALL whose callee reports neither a Python 'call' nor a 'c_call' event is a class
    (``dict(...)``, ``zip(...)``): the next instruction of that frame counts it as a call after
    which the interpreter checks (``type(x)`` is the one class call that does not, warm; it is
    counted too, the conservative side)."""

    def __init__(self, rules, watched):
        self.rules = rules
        self.watched = watched
        # Keyed by id(code), not by the code object: hashing a code object hashes its bytecode,
        # constants and names each time (about 2 us on CPython 3.12 for autotuner.py's `run`,
        # against 0.1 us for an int), and these are looked up at every opcode and C-call event.
        # `_codes` holds each code object counted, so that its id names it for the process.
        self.counts = {}   # (id(code), offset) -> executions of that C-call site
        self.opnames = {}  # id(code) -> (code, {offset: opname})
        self._codes = {}   # id(code) -> code
        self._lines = {}   # (id(code), offset) -> line (_line: the monitoring tracer's names)
        self._watch_cache = {}
        # 3.12+: settrace runs on sys.monitoring; opcode events need f_trace set first and the
        # tracer installed again (measured, see docs/GIL.md).
        self._reinstall = sys.version_info >= (3, 12)

    # ---- per logical thread (called by that thread) ----
    def thread_start(self, extra=None):
        """Starts tracing the calling thread; `extra`: another profile function (patch reach)
        called before the tracer's own for each event."""
        inner = self.profile
        if extra is None:
            sys.setprofile(inner)
        else:
            def both(frame, event, arg):
                extra(frame, event, arg)
                inner(frame, event, arg)
            sys.setprofile(both)
        sys.settrace(self.global_trace)

    def thread_stop(self, ts):
        """Stops tracing the calling thread (its task ended, or raised)."""
        sys.settrace(None)
        sys.setprofile(None)

    def install(self):
        """Once per process, before the threads start (nothing to do: per thread)."""

    def close(self):
        """After the run (tests): nothing to give back."""

    def _is_watched(self, filename):
        w = self._watch_cache.get(filename)
        if w is None:
            w = bool(self.watched(filename))
            self._watch_cache[filename] = w
        return w

    def _ops(self, code):
        e = self.opnames.get(id(code))
        if e is None or e[0] is not code:
            e = self.opnames[id(code)] = (code, opnames_of(code))
        return e[1]

    # NB: the hooks run for every call and C call of the run (thousands per run): the cached
    # answers of is_ours, current and _is_watched are looked up inline, without a call.
    def global_trace(self, frame, event, arg):
        code = frame.f_code
        filename = code.co_filename
        ours = _ours_cache.get(filename)
        if ours is None:
            ours = is_ours(filename)
        if ours:
            return None
        ts = getattr(_local, "ts", None)
        if ts is None or ts.quiet:
            return None
        ts.pending_call = None
        if self.rules.at_entry(code):
            ts.opportunity = True
        watched = self._watch_cache.get(filename)
        if watched is None:
            watched = self._is_watched(filename)
        if watched:
            frame.f_trace = self.local_trace
            frame.f_trace_lines = False
            if ts.opportunity:
                # Nothing in this step can matter any more: look again at the next point.
                frame.f_trace_opcodes = False
                ts.muted.append(frame)
            else:
                frame.f_trace_opcodes = True
            if self._reinstall:
                sys.settrace(self.global_trace)
            return self.local_trace
        return None

    def local_trace(self, frame, event, arg):
        if event != "opcode":
            return self.local_trace
        ts = getattr(_local, "ts", None)
        if ts is None or ts.quiet:
            return self.local_trace
        if not ts.opportunity:
            if ts.pending_call is frame:
                ts.pending_call = None
                ts.opportunity = True
            else:
                op = self._ops(frame.f_code).get(frame.f_lasti)
                if op in _CALL_OPS:
                    ts.pending_call = frame
                elif op is not None and self.rules.at_opcode(op, True):
                    ts.opportunity = True
        if ts.opportunity:
            frame.f_trace_opcodes = False
            ts.muted.append(frame)
        return self.local_trace

    def profile(self, frame, event, arg):
        if event == "call" or event == "return":
            return  # most events: nothing to do, and nothing to look up
        ts = getattr(_local, "ts", None)
        if ts is None or not ts.traced:
            return  # not a logical thread, or rerace's own bookkeeping (Unseen)
        if event == "c_call":
            ts.pending_call = None
            return
        if event != "c_return" and event != "c_exception":
            return
        code = frame.f_code
        ours = _ours_cache.get(code.co_filename)
        if ours is None:
            ours = is_ours(code.co_filename)
        if ours:
            return
        self.c_returned(ts, code, frame.f_lasti, arg, frame.f_lineno)

    def c_returned(self, ts, code, offset, func, line):
        """The C callable `func`, called at `offset` of `code` (not rerace's), returned in the
        logical thread `ts`: counts the site's executions, reports a cold site's count as an
        access, and marks the hand-over place if the call is one. Both tracers' one rule."""
        k = (id(code), offset)
        n = self.counts.get(k, 0) + 1
        if n == 1:
            self._codes[k[0]] = code
        self.counts[k] = n
        if ts.quiet:
            return
        if n <= self.rules.warmup + 1 and RUN is not None and \
                self.rules.after_c_call(func, False) != self.rules.after_c_call(func, True):
            # Whether this call site still runs unspecialized depends on how often every thread
            # ran it: while it is cold, its execution count is shared state that decides where
            # steps end, so it is an access (DPOR must order two threads' cold executions).
            # Named by line (what a reader looks up) and bytecode offset (what tells two calls
            # of one line apart): "autotuner.py:120" would read as a line.
            if line is None:
                line = self._line(code, offset)
            RUN.post("m", W, "gil-warmup %s:%d@%d" % (_short(code.co_filename), line, offset),
                     "cold call in %s: CPython has not yet specialized it" % code.co_name)
        if ts.opportunity:
            return
        if self.rules.blocking(func) or self.rules.after_c_call(func, n > self.rules.warmup):
            ts.opportunity = True

    def _line(self, code, offset):
        """The source line of `offset` in `code` (cached per site)."""
        k = (id(code), offset)
        line = self._lines.get(k)
        if line is None:
            line = 0
            for start, end, ln in code.co_lines():
                if start <= offset < end and ln is not None:
                    line = ln
                    break
            self._lines[k] = line
        return line


_BUILTIN = type(len)                   # builtin_function_or_method
_METHOD_DESCRIPTOR = type(list.append)  # method_descriptor


class MonitoringTracer(Tracer):
    """The GIL tracer on ``sys.monitoring`` (CPython 3.12+): the same hand-over places as
    ``Tracer`` with a fraction of its events and no re-instrumentation per step.

    On 3.12+ ``sys.settrace`` and ``sys.setprofile`` are themselves built on sys.monitoring,
    with every event on: each Python call and return and each C call and return reaches a
    Python function, and a frame's opcode events come back after a point only by installing the
    tracer again, which re-instruments every code object the run then enters (about a quarter
    of a run's CPU, measured: docs/PERFORMANCE.md). Here the events are the ones the rules
    read, for the interpreter (one tool id; events reach every thread, a thread without a
    logical ThreadState returns at once):

    PY_START, PY_RESUME  a function entered (``Rules.at_entry``); rerace's own code is disabled
                         at its first event
    CALL                 not read, but C_RETURN and C_RAISE come only with it; disabled in
                         rerace's own code
    C_RETURN, C_RAISE    a C call returned: counted per (code, offset) for warm/cold, a
                         blocking call or a call that checks after it is a hand-over place. As
                         ``sys.setprofile`` did, builtin functions and method descriptors (bound
                         to their self, as ``legacy_tracing.c`` binds them) are C calls; any
                         other callee (a class, a C callable object) in watched code is a
                         place, as the old tracer's pending CALL was
    JUMP                 set on each watched code object at its first entry: a backward jump
                         (``Rules.at_opcode`` of the jump's original opname)

    A thread's events stop when its ``ThreadState.traced`` is False (after the exception that
    ends its task, and at its end), as the old tracer's ``sys.settrace(None)`` did.
    ``install`` once per process (the replay child), ``close`` to give the tool id back."""

    TOOL_NAME = "rerace"

    def __init__(self, rules, watched, tool):
        super().__init__(rules, watched)
        self.tool = tool
        self._jumps = set()    # id(code) of watched code objects with JUMP events on
        self.reach = None      # reach.Reach: told of each function entry (patch reach)
        self._installed = False

    @classmethod
    def make(cls, rules, watched):
        """A MonitoringTracer with a free tool id, or None (before 3.12, or every id taken)."""
        mon = getattr(sys, "monitoring", None)
        if mon is None or os.environ.get("RERACE_GIL_TRACER") == "settrace":
            return None
        for tool in (4, 3, 5, 1, 0, 2):
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, cls.TOOL_NAME)
                return cls(rules, watched, tool)
        return None

    def install(self):
        mon = sys.monitoring
        ev = mon.events
        mon.register_callback(self.tool, ev.PY_START, self.on_start)
        mon.register_callback(self.tool, ev.PY_RESUME, self.on_start)
        mon.register_callback(self.tool, ev.CALL, self.on_call)
        mon.register_callback(self.tool, ev.C_RETURN, self.on_c_return)
        mon.register_callback(self.tool, ev.C_RAISE, self.on_c_return)
        mon.register_callback(self.tool, ev.JUMP, self.on_jump)
        mon.set_events(self.tool, ev.PY_START | ev.PY_RESUME | ev.CALL | ev.C_RETURN | ev.C_RAISE)
        self._installed = True

    def thread_start(self, extra=None):
        # Patch reach, when set, is this tracer's own (self.reach, from on_start): `extra` (its
        # profile function) is not needed then.
        if extra is not None and self.reach is None:
            sys.setprofile(extra)

    def thread_stop(self, ts):
        ts.traced = False
        sys.setprofile(None)

    def close(self):
        mon = sys.monitoring
        if self._installed:
            mon.set_events(self.tool, 0)
            for c in self._codes_with_jumps():
                mon.set_local_events(self.tool, c, 0)
            self._installed = False
        mon.free_tool_id(self.tool)

    def _codes_with_jumps(self):
        return [self.opnames[i][0] for i in self._jumps if i in self.opnames]

    # NB: called for every Python call and every C call of every thread: the cached answers
    # are looked up inline, without a call (see Tracer).
    def on_start(self, code, offset):
        filename = code.co_filename
        ours = _ours_cache.get(filename)
        if ours is None:
            ours = is_ours(filename)
        reach = self.reach
        if ours:
            if reach is None or not reach.wanted(code):
                return sys.monitoring.DISABLE
            ts = getattr(_local, "ts", None)
            if ts is not None and ts.traced:
                reach.on_start(code)  # a shipped fix's replacement (rerace_real/fixes)
            return None
        ts = getattr(_local, "ts", None)
        if ts is None or not ts.traced:
            return None
        if reach is not None:
            reach.on_start(code)
        if ts.quiet:
            return None
        if self.rules.at_entry(code):
            ts.opportunity = True
        if id(code) not in self._jumps:
            watched = self._watch_cache.get(filename)
            if watched is None:
                watched = self._is_watched(filename)
            if watched:
                self._ops(code)  # holds the code object, so that its id names it
                self._jumps.add(id(code))
                sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.JUMP)
        return None

    def on_call(self, code, offset, callable, arg0):
        ours = _ours_cache.get(code.co_filename)
        if ours is None:
            ours = is_ours(code.co_filename)
        if ours:
            return sys.monitoring.DISABLE  # and with it this site's C_RETURN and C_RAISE
        return None

    def on_jump(self, code, src, dest):
        ts = getattr(_local, "ts", None)
        if ts is None or ts.quiet or not ts.traced or ts.opportunity:
            return None
        op = self._ops(code).get(src)
        if op is not None and self.rules.at_opcode(op, True):
            ts.opportunity = True
        return None

    def on_c_return(self, code, offset, callable, arg0):
        ts = getattr(_local, "ts", None)
        if ts is None or not ts.traced:
            return
        ours = _ours_cache.get(code.co_filename)
        if ours is None:
            ours = is_ours(code.co_filename)
        if ours:
            return  # the first call of a site in rerace's code (CALL disables the next ones)
        tp = type(callable)
        if tp is _BUILTIN:
            func = callable
        elif tp is _METHOD_DESCRIPTOR:
            func = callable if arg0 is sys.monitoring.MISSING else callable.__get__(arg0, type(arg0))
        else:
            # A class or another C callable: no count (sys.setprofile reported none); in watched
            # code a call after which the interpreter checks.
            if not ts.quiet and not ts.opportunity:
                watched = self._watch_cache.get(code.co_filename)
                if watched is None:
                    watched = self._is_watched(code.co_filename)
                if watched:
                    ts.opportunity = True
            return
        self.c_returned(ts, code, offset, func, None)


def make_tracer(rules, watched):
    """The GIL tracer for this interpreter: on sys.monitoring where it exists (3.12+), else
    on sys.settrace and sys.setprofile (``RERACE_GIL_TRACER=settrace`` forces the latter, to
    compare the two)."""
    return MonitoringTracer.make(rules, watched) or Tracer(rules, watched)
