"""The GIL tracer: where the running interpreter could hand the GIL over to another thread.

In GIL mode an access is a scheduling point only when the thread passed a hand-over place since
its previous point (control.py). The tracer watches the running logical thread's code and sets
``ThreadState.opportunity`` where the version's rules (gil.py) say CPython could switch: a
function entry, a backward jump, a call that releases the GIL or checks after it. Two
implementations mark the same places: ``Tracer`` on ``sys.settrace``/``sys.setprofile``, and
``MonitoringTracer`` on ``sys.monitoring`` (CPython 3.12+); ``make_tracer`` picks one.

Set-up (engine_setup.py) makes the tracer once, before any run forks; each run's child installs
its own copy. Its hooks run in the logical thread that holds the turn, and post cold call sites
to that run (``control.RUN``).
"""

import os
import sys

from . import control
from .control import W, _local
from .source_files import _ours_cache, _short, is_ours

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
    the bytes are read directly (tests/python/test_control.py checks it against dis)."""
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
        # The hooks in C when built for this interpreter (the same decisions: the rules are
        # asked once per code object and per C callable, _code_info and _decide), else this
        # class's Python methods. `hooks`: which, for the engine's information.
        self._c = _hooks_module()
        self.hooks = "C (_rerace_gil)" if self._c is not None else "Python"

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
        """Once per process, before the threads start: the C hooks, when they load, take the
        place of global_trace, local_trace, profile and c_returned (they keep the counts)."""
        if self._c is not None:
            hooks = self._c.Hooks(self, control._local, control, None, None, self.rules.warmup,
                                  sys.settrace if self._reinstall else None)
            self.global_trace = hooks.global_trace
            self.local_trace = hooks.local_trace
            self.profile = hooks.profile
            self.c_returned = hooks.c_returned
            self.c_hooks = hooks

    def end_run(self):
        """After a run, in a process that runs another (child.serve_here): its counts gone;
        ``install`` starts the next with hooks of its own (the C hooks keep their counts and
        what they know of each code object). sys.monitoring's events stay on, and so do the
        JUMP events of the code objects that have them and the places the hooks disabled
        (rerace's own code: a function of the code object alone), as a fresh child would set
        them again: turning them off and on makes the interpreter instrument every code object
        again at its next execution. (sys.settrace's are each thread's: its threads end.)"""
        self.counts.clear()
        self.c_hooks = None

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
            return  # not a logical thread, or rerace's own bookkeeping (control.Unseen)
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
        if n <= self.rules.warmup + 1 and control.RUN is not None and \
                self.rules.after_c_call(func, False) != self.rules.after_c_call(func, True):
            self._cold_site(code, offset, line)
        if ts.opportunity:
            return
        if self.rules.blocking(func) or self.rules.after_c_call(func, n > self.rules.warmup):
            ts.opportunity = True

    # ---- the C hooks' questions (each asked once per code object or C callable) ----
    def _code_info(self, code):
        """(ours, watched, at_entry, offsets of its instructions that are hand-over places,
        offsets of its CALL instructions) of `code`; the offsets only for watched code."""
        filename = code.co_filename
        ours = _ours_cache.get(filename)
        if ours is None:
            ours = is_ours(filename)
        watched = not ours and self._is_watched(filename)
        places, calls = (), ()
        if watched:
            ops = self._ops(code)
            calls = [off for off, op in ops.items() if op in _CALL_OPS]
            places = [off for off, op in ops.items()
                      if op not in _CALL_OPS and self.rules.at_opcode(op, True)]
        return (bool(ours), bool(watched), bool(self.rules.at_entry(code)), places, calls)

    def _decide(self, func):
        """(blocking, checks after it cold, checks after it warm) of the C callable `func`."""
        r = self.rules
        return (bool(r.blocking(func)), bool(r.after_c_call(func, False)),
                bool(r.after_c_call(func, True)))

    def _cold_site(self, code, offset, line):
        """A cold C-call site whose warm form decides differently ran: whether it still runs
        unspecialized depends on how often every thread ran it, so while it is cold its
        execution count is shared state that decides where steps end: an access (DPOR must order
        two threads' cold executions). Named by line (what a reader looks up) and bytecode
        offset (what tells two calls of one line apart): "autotuner.py:120" would read as a
        line."""
        if line is None:
            line = self._line(code, offset)
        control.RUN.post("m", W,
                         "gil-warmup %s:%d@%d" % (_short(code.co_filename), line, offset),
                         "cold call in %s: CPython has not yet specialized it" % code.co_name)

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


class HooksUnavailable(Exception):
    """RERACE_GIL_HOOKS=c and the C hooks cannot load here (the message says why)."""


# The _rerace_gil this engine was built with (gil_hooks.cc's kProtocol).
_HOOKS_PROTOCOL = 1


def _hooks_module():
    """The GIL tracer's hooks in C (``_rerace_gil``, replay/engine/cext/gil_hooks.cc: built for
    CPython 3.11+ with a GIL, beside this package or on the engine's path), or None: the Python
    hooks below run, the same reports, slower. ``RERACE_GIL_HOOKS=python`` asks for the Python
    ones; ``=c`` makes C hooks that cannot load an error (HooksUnavailable) instead."""
    want = os.environ.get("RERACE_GIL_HOOKS", "")
    if want == "python":
        return None
    why = None
    if sys.version_info < (3, 11):
        why = "CPython %d.%d (the module is built for the stable ABI of 3.11)" % sys.version_info[:2]
    elif not getattr(sys, "_is_gil_enabled", lambda: True)():
        why = "a free-threaded CPython (the module is built for the stable ABI with a GIL)"
    else:
        try:
            import _rerace_gil
            found = getattr(_rerace_gil, "PROTOCOL", None)
            if found == _HOOKS_PROTOCOL:
                return _rerace_gil
            # Another build's module (a stale one on PYTHONPATH): its hooks may not be these.
            why = "the _rerace_gil found (%s) is another build's: protocol %s, this engine's %d" % (
                getattr(_rerace_gil, "__file__", "?"), found, _HOOKS_PROTOCOL)
        except ImportError as e:
            why = "_rerace_gil does not import: %s" % e
    if want == "c":
        raise HooksUnavailable("RERACE_GIL_HOOKS=c: " + why)
    return None


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
        hooks = self
        if self._c is not None:
            # This process's C hooks: they keep the counts (c_returned is theirs, for logical.py).
            hooks = self._c.Hooks(self, control._local, control, mon.MISSING, mon.DISABLE,
                                  self.rules.warmup, None)
            self.c_returned = hooks.c_returned
            self.c_hooks = hooks
        mon.register_callback(self.tool, ev.PY_START, hooks.on_start)
        mon.register_callback(self.tool, ev.PY_RESUME, hooks.on_start)
        mon.register_callback(self.tool, ev.CALL, hooks.on_call)
        mon.register_callback(self.tool, ev.C_RETURN, hooks.on_c_return)
        mon.register_callback(self.tool, ev.C_RAISE, hooks.on_c_return)
        mon.register_callback(self.tool, ev.JUMP, hooks.on_jump)
        if not self._installed:
            mon.set_events(self.tool, ev.PY_START | ev.PY_RESUME | ev.CALL | ev.C_RETURN |
                           ev.C_RAISE)
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

    def _jumps_on(self, code):
        """JUMP events on for the watched code object `code` (its first entry)."""
        if id(code) in self._jumps:
            return  # on since an earlier run of this process (child.serve_here)
        self._ops(code)  # holds the code object, so that its id names it
        self._jumps.add(id(code))
        sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.JUMP)

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
                self._jumps_on(code)
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
