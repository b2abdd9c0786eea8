"""Where can CPython with the GIL hand the interpreter to another thread?  Two measurements.

1. ``probe`` (deterministic; what tests/test_gil_rules.py uses): a window ``write; MID; read``
   is preceded by a *trip*, ``T + S[0]``, whose ``__add__`` is ``_thread.interrupt_main``: a
   C call reached through the ``nb_add`` slot (no CALL instruction, so no eval-breaker check)
   that marks SIGUSR1 pending and sets the eval breaker. The Python signal handler then runs
   at the *first* eval-breaker check after the trip, which is exactly where a pending GIL
   drop request would be honoured (ceval.c ``eval_frame_handle_pending`` in 3.10,
   ``_Py_HandlePending`` from 3.12; same checks). The handler records the frame and its
   ``f_lasti``: if that lies before the read, the window contains a check (SPLIT), otherwise
   it is atomic. Runs in the main thread with no tracing; one trial decides.
2. ``storm`` (statistical, the real thing): N threads run ``self.nargs = dict(zip(...)); MID;
   all_args = {**self.nargs, **kw}`` on one shared object at ``sys.setswitchinterval(1e-6)``
   and count the trials in which another thread's write landed inside the window.
   cold: each call runs a fresh copy of the code object (first execution of every instruction);
   warm: one function per thread, called 200 times before counting.

    python3 tools/experiments/gil_storm.py            # both, this interpreter
    python3 tools/experiments/gil_storm.py probe
    python3 tools/experiments/gil_storm.py storm --seconds 2 --threads 4
    for p in /root/.pyenv/versions/3.1[0-3]*/bin/python3; do $p tools/experiments/gil_storm.py; done

Each row also prints what ``rerace_real.gil.rules_for_running()`` predicts for the window,
from the events the replay engine would see (opcode events, 'call' and 'c_call' events).
"""

import argparse
import dis
import os
import signal
import sys
import threading
import time
import types
import _thread

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "replay", "engine", "python"))
from rerace_real import gil  # noqa: E402

# --------------------------------------------------------------------------- the windows

def g():
    return 1


class O2:
    def m(self):
        return 1

    @property
    def p(self):
        return 1


# kind -> (middle statement(s), one line each, indented by the template)
WINDOWS = {
    # autotuner.py 213-216 in Triton 3.6: only `used_cached_result = True` and a len() between
    "triton_len": ["used = True", "if len(self.configs) > 1: pass"],
    "nothing": ["pass"],
    "attr": ["q = self.configs", "self.other = 1"],
    "dict_display": ["d = {'a': 1, **kw}"],
    "subscr_in": ["kw['k'] = 1", "z = kw['k']", "z = 'k' in kw"],
    "if_jumps": ["if x > 100: pass"],          # condition false: the conditional jump is taken
    "if_falls": ["if x < 100: pass"],          # condition true: falls through
    "and_or": ["z = 0 and lst", "z = x or lst"],   # both short-circuit: the jump is taken
    "try_except": ["try: z = kw['nope']", "except KeyError: pass"],
    "isinstance": ["isinstance(x, int)"],
    "type1": ["type(x)"],
    "list_append": ["lst.append(1)"],
    "list_pop": ["lst.append(0)", "lst.pop()"],  # pop: a METH_FASTCALL method descriptor
    "abs": ["abs(x)"],
    "hasattr": ["hasattr(x, 'a')"],
    "str1": ["str(x)"],
    "tuple1": ["tuple(lst)"],
    "dict_call": ["dict(kw)"],
    "kw_call": ["dict(kw, a=1)"],
    "py_call": ["g()"],
    "py_method": ["o2.m()"],
    "property": ["o2.p"],
    "loop": ["for _ in lst: pass"],
    "while": ["i = 0", "while i < 2: i += 1"],
    "listcomp": ["z = [y for y in lst]"],
    "with_lock": ["with L: pass"],
}

TEMPLATE = """
def f(self, a, b, kw, lst, x, L=L, o2=o2):
    self.nargs = dict(zip(a, b))
    {trip}
    {mid}
    all_args = {{**self.nargs, **kw}}
    fired = H[0]
    return all_args, fired
"""
# `fired = H[0]`: LOAD_GLOBAL, LOAD_CONST, BINARY_SUBSCR (a list), STORE_FAST: no check
# between the read and it, so it tells whether the probe's handler ran inside the window
# (by execution order, not by offset: 3.12+ put exception handlers at the end of the code).


def make(kind, trip):
    ns = dict(T=_TRIP, S=_SIG, H=_FIRED, g=g, L=threading.Lock(), o2=O2())
    src = TEMPLATE.format(trip="T + S[0]" if trip else "pass",
                          mid="\n    ".join(WINDOWS[kind]))
    exec(compile(src, "<window %s>" % kind, "exec"), ns)
    return ns["f"]


class Obj:
    pass


def args_for(obj, tid=0):
    return (obj, ("a", "tid"), (1, tid), {"k": 1}, [1, 2], 3)


# --------------------------------------------------------------------------- probe

class _Trip:
    __add__ = _thread.interrupt_main  # a builtin: no binding, called as interrupt_main(signum)


_TRIP = _Trip()
_SIG = [signal.SIGUSR2]
_HITS = []
_FIRED = [0]


def _handler(signum, frame):
    _FIRED[0] = 1
    chain = []
    while frame is not None:
        chain.append((frame.f_code, frame.f_lasti))
        frame = frame.f_back
    _HITS.append(chain)


def probe(kind, warm_calls):
    """'split' if an eval-breaker check lies between the write and the read, else 'atomic';
    plus where the first check after the trip was."""
    old1 = signal.signal(signal.SIGUSR1, _handler)
    old2 = signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # interrupt_main: a no-op for it
    try:
        f = make(kind, trip=True)
        o = Obj()
        o.configs = [1, 2]
        _SIG[0] = signal.SIGUSR2
        for _ in range(warm_calls):
            f(*args_for(o))
        _SIG[0] = signal.SIGUSR1
        del _HITS[:]
        _FIRED[0] = 0
        fired = f(*args_for(o))[1]
        for _ in range(3):  # backward jumps: the handler has run by the end of this loop
            pass
    finally:
        _SIG[0] = signal.SIGUSR2
        signal.signal(signal.SIGUSR1, old1)
        signal.signal(signal.SIGUSR2, old2)
    chain = _HITS[0]
    mine = [lasti for code, lasti in chain if code is f.__code__]
    verdict = "split" if fired else "atomic"
    if not mine:
        return verdict, "after return"
    ins = list(dis.get_instructions(f))
    at = max((i for i in ins if i.offset <= mine[0]), key=lambda i: i.offset).opname
    where = at if chain[0][0] is f.__code__ else "%s>%s" % (at, chain[0][0].co_name)
    return verdict, where


def warm_threshold(kind, limit=16):
    """Smallest number of earlier calls after which the window is atomic (None: never)."""
    for n in range(limit):
        if probe(kind, n)[0] == "atomic":
            return n
    return None


# --------------------------------------------------------------------------- prediction

def predict(kind, warm, rules=None):
    """Run the window once under sys.settrace/setprofile, as the replay engine watches code,
    and ask `rules` whether any event between the write (STORE_ATTR nargs) and the read
    (DICT_UPDATE/DICT_MERGE) is a place where the GIL can change hands."""
    rules = rules or gil.rules_for_running()
    f = make(kind, trip=False)
    code = f.__code__
    instrs = list(dis.get_instructions(f))
    ops = {i.offset: i.opname for i in instrs}
    fallthrough = {a.offset: b.offset for a, b in zip(instrs, instrs[1:])}
    jump_target = {i.offset: i.argval for i in instrs if i.opcode in dis.hasjrel + dis.hasjabs}
    events = []

    def tracer(frame, event, arg):
        if event == "call":
            events.append(("entry", frame.f_code, None))
            if frame.f_code is code:
                # 3.12/3.13: opcode events need f_trace set first and settrace re-armed
                frame.f_trace = tracer
                frame.f_trace_opcodes = True
                sys.settrace(tracer)
                return tracer
            return None
        if event == "opcode":
            events.append(("op", ops.get(frame.f_lasti, "?"), frame.f_lasti))
        elif event == "exception":
            events.append(("exception", None, None))
        return tracer

    def profiler(frame, event, arg):
        if event == "c_return" and frame.f_code is code:
            events.append(("c_return", arg, None))

    o = Obj()
    o.configs = [1, 2]
    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        f(*args_for(o))
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    start = next(i for i, e in enumerate(events) if e[:2] == ("op", "STORE_ATTR"))
    end = next(i for i, e in enumerate(events)
               if e[0] == "op" and e[1] in ("DICT_UPDATE", "DICT_MERGE", "BUILD_MAP_UNPACK"))
    window = events[start + 1:end + 1]
    reasons = []
    for n, ev in enumerate(window):
        if ev[0] == "op":
            nxt = next((e[2] for e in window[n + 1:] if e[0] == "op"), None)
            jumped = None if nxt is None else nxt != fallthrough.get(ev[2])
            if jump_target.get(ev[2]) == fallthrough.get(ev[2]):
                jumped = None  # `if c: pass`: taken or not, the next offset is the same
            if rules.at_opcode(ev[1], warm, jumped=jumped):
                reasons.append(ev[1])
        elif ev[0] == "entry":
            if rules.at_entry(ev[1]):
                reasons.append("entry %s" % ev[1].co_name)
            if rules.after_call(ev[1], warm):
                reasons.append("after py call")
        elif ev[0] == "exception":
            if rules.at_exception_handler():
                reasons.append("exception handler")
        elif ev[0] == "c_return":
            if rules.after_c_call(ev[1], warm):
                reasons.append("after %s" % getattr(ev[1], "__name__", ev[1]))
            if rules.blocking(ev[1]):
                reasons.append("blocking %s" % getattr(ev[1], "__name__", ev[1]))
    # calls to classes are invisible to sys.setprofile: ask the rules with the class itself
    for callee, nargs in _class_callees(kind):
        if rules.after_c_call(callee, warm, nargs=nargs):
            reasons.append("after %s()" % callee.__name__)
    return ("split" if reasons else "atomic"), ", ".join(reasons) or "-"


def _class_callees(kind):
    text = " ".join(WINDOWS[kind])
    out = []
    for name, cls in (("type(", type), ("str(", str), ("tuple(", tuple), ("dict(", dict)):
        if name in text:
            out.append((cls, 1))
    return out


# --------------------------------------------------------------------------- storm

def storm(kind, warm, threads, seconds):
    """(calls in which another thread's `self.nargs` write landed inside the window, calls),
    all threads calling for `seconds`."""
    shared = Obj()
    shared.configs = [1, 2]
    split = [0] * threads
    calls = [0] * threads
    start = threading.Barrier(threads)
    stop = []

    def worker(tid):
        f = make(kind, trip=False)
        a = args_for(shared, tid)
        if warm:
            for _ in range(200):
                f(*a)
        start.wait()
        n = k = 0
        base = f
        while not stop:
            for _ in range(100):
                if not warm:  # a fresh code object: every instruction runs for the first time
                    f = types.FunctionType(base.__code__.replace(), base.__globals__,
                                           None, base.__defaults__)
                if f(*a)[0]["tid"] != tid:
                    n += 1
            k += 100
        split[tid] = n
        calls[tid] = k

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        time.sleep(seconds)
        stop.append(1)
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return sum(split), sum(calls)


# --------------------------------------------------------------------------- main

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", default="both", choices=["probe", "storm", "both"])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=0.5, help="per (window, cold|warm) cell")
    ap.add_argument("--kinds", default=",".join(WINDOWS))
    ns = ap.parse_args(argv)
    rules = gil.rules_for_running()
    kinds = ns.kinds.split(",")
    print("# %s  (%s)  rules: %s, warmup %d" % (
        sys.version.split()[0], sys.executable, rules.name, rules.warmup))
    if ns.what in ("probe", "both"):
        print("%-13s %-28s %-28s %-15s %s" % ("window", "probe cold", "probe warm",
                                              "rules c/w", "warm after n calls"))
        for k in kinds:
            pc, wc = probe(k, 0)
            pw, ww = probe(k, 50)
            rc = predict(k, False, rules)[0]
            rw = predict(k, True, rules)[0]
            ok = ""
            if "atomic" in (rc, rw) and (rc, rw) != (pc, pw) and (
                    (rc == "atomic" and pc == "split") or (rw == "atomic" and pw == "split")):
                ok = "  <-- RULES MISS A CHECK"
            elif (rc, rw) != (pc, pw):
                ok = "  (rules conservative)"
            thr = warm_threshold(k) if pc != pw else "-"
            print("%-13s %-28s %-28s %-15s %s%s" % (
                k, "%s@%s" % (pc, wc), "%s@%s" % (pw, ww), "%s/%s" % (rc, rw), thr, ok))
    if ns.what in ("storm", "both"):
        print("storm: %d threads, switchinterval 1e-6, %.1f s per cell"
              % (ns.threads, ns.seconds))
        print("%-13s %-16s %-16s %s" % ("window", "cold split/N", "warm split/N", "rules c/w"))
        for k in kinds:
            c = storm(k, False, ns.threads, ns.seconds)
            w = storm(k, True, ns.threads, ns.seconds)
            print("%-13s %-16s %-16s %s/%s" % (k, "%d/%d" % c, "%d/%d" % w,
                                                predict(k, False, rules)[0],
                                                predict(k, True, rules)[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
