"""Where CPython can hand the GIL to another thread, per version (3.10 to 3.14).

A thread with the GIL gives it up only

* at an *eval-breaker check* while another thread has asked for the GIL (the drop request
  sets the eval breaker; ``take_gil``/``drop_gil`` in Python/ceval_gil.c), and
* inside a C call that releases it (``Py_BEGIN_ALLOW_THREADS``: sleeps, contended lock
  waits, blocking I/O).

Which instructions check the eval breaker differs per version and per specialization. This
module answers, for the replay engine (``gil_tracer.py``), "can the running thread lose the
interpreter here?" from the events it observes in the traced thread:

* ``at_entry(code)``                - a Python function is entered ('call' event);
* ``at_opcode(opname, warm)``       - an instruction of watched code is about to run
                                      (the *original* opname, as ``dis`` shows it);
* ``after_c_call(func, warm)``      - a CALL of watched code called the C callable ``func``
                                      and it returned ('c_return');
* ``blocking(func)``                - ``func`` may release the GIL while it runs.

Additions (optional for the engine, each a place the four above cannot express):

* ``at_opcode(opname, warm, jumped=...)`` - whether a conditional jump was taken (3.10/3.11
                                      check only then; unknown = True);
* ``after_c_call(func, warm, nargs=...)`` - also for classes, which sys.setprofile does not
                                      report (``dict(...)``, ``type(x)``);
* ``after_call(callee, warm)``      - after a CALL of a *Python* function returns: True on
                                      3.10 only;
* ``at_exception_handler()``        - an exception is caught in watched code: True on 3.10.

``warm`` means the instruction has executed more than ``Rules.warmup`` times before (the
engine counts executions per (code object, offset), over all threads together: the
specialization lives in the shared code object); warm instructions run in their specialized
form, cold ones in the generic form.

Every rule below was derived from the interpreter source of that version (file and
function/macro cited beside it) and, for 3.10.13, 3.11.7, 3.12.1 and 3.13.0, checked on the
real interpreter by tools/experiments/gil_storm.py (``probe``: a pending signal is
handled at exactly the eval-breaker checks, so its handler shows where the first check after
a point is; see docs/GIL.md). 3.14 is from its source only. Where the source leaves a doubt
the rule allows a switch (more interleavings, never fewer) and says so.

NB: the check after a CALL happens *after* the callee ran: a switch there comes after the
callee's own accesses, not before them. ``at_opcode('CALL', ...)`` is therefore False: the
call's check is reported by ``after_c_call`` (C callees, classes) or ``after_call`` (any
callee, Python functions included, for 3.10 where the check also follows a Python call).

Pure stdlib; import-safe on any Python 3.
"""

import builtins
import sys

__all__ = ["Rules", "rules_for", "rules_for_running", "KNOWN_VERSIONS"]

KNOWN_VERSIONS = ((3, 10), (3, 11), (3, 12), (3, 13), (3, 14))

# --------------------------------------------------------------------------- blocking calls
# C callables that release the GIL while they run (Py_BEGIN_ALLOW_THREADS around the system
# call), named as "module.qualname" of the callable. NB: lock acquires first try without
# releasing the GIL (Modules/_threadmodule.c acquire_timed: "first a simple non-blocking try
# without releasing the GIL"); they release it only when the lock is held by someone else,
# which the engine's controlled locks decide. Listed here so that an uncontrolled lock is a
# point rather than nothing.
_BLOCKING_QUALNAMES = frozenset([
    "time.sleep",
    "lock.acquire", "lock.acquire_lock", "lock.__enter__",          # _thread.LockType
    "RLock.acquire", "RLock.__enter__",                              # _thread.RLock
    "_thread.lock.acquire", "_thread.RLock.acquire",
    "os.read", "os.write", "os.readv", "os.writev", "os.pread", "os.pwrite",
    "os.waitpid", "os.wait", "os.wait3", "os.wait4", "os.waitid", "os.system",
    "os.fsync", "os.fdatasync", "os.open", "os.close", "os.stat", "os.lstat", "os.fstat",
    "os.listdir", "os.scandir", "os.replace", "os.rename", "os.unlink", "os.remove",
    "os.mkdir", "os.makedirs", "os.sendfile", "os.posix_spawn", "os.fork",
    "posix.read", "posix.write", "posix.waitpid", "posix.system", "posix.stat",
    "select.select", "select.poll.poll", "select.epoll.poll",
    "socket.socket.recv", "socket.socket.recv_into", "socket.socket.send",
    "socket.socket.sendall", "socket.socket.accept", "socket.socket.connect",
    "FileIO.read", "FileIO.readinto", "FileIO.readall", "FileIO.write",
    "BufferedReader.read", "BufferedReader.readline", "BufferedReader.readinto",
    "BufferedReader.peek", "BufferedReader.read1",
    "BufferedWriter.write", "BufferedWriter.flush", "BufferedRandom.read",
    "BufferedRandom.write", "BufferedRandom.flush",
    "TextIOWrapper.read", "TextIOWrapper.readline", "TextIOWrapper.write",
    "TextIOWrapper.flush",
    "builtins.input", "builtins.print", "builtins.open",
    "zlib.compress", "zlib.decompress", "_hashlib.HASH.update",
    "_queue.SimpleQueue.get", "_thread.start_new_thread",
])
# Method names that block whatever the type (GPU synchronisations in torch/cupy, futures).
_BLOCKING_NAMES = frozenset([
    "synchronize", "elapsed_time", "wait_event", "wait_stream",
])


def _qualname(func):
    """'module.qualname' of a callable, as far as the C object exposes it."""
    mod = getattr(func, "__module__", None)
    qn = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or ""
    self = getattr(func, "__self__", None)
    if mod is None and self is not None and not isinstance(self, type(sys)):
        # a bound builtin method: <built-in method acquire of _thread.lock object>
        mod = type(self).__module__
    return "%s.%s" % (mod, qn) if mod else qn


def _is_list_append(func):
    # the profiler reports `lst.append(x)` as the bound builtin method (3.10/3.11 C_TRACE,
    # 3.12+ Python/legacy_tracing.c sys_profile_call_or_return binds method descriptors)
    if func is list.append:
        return True
    return (getattr(func, "__qualname__", None) == "list.append"
            and isinstance(getattr(func, "__self__", None), list))


# --------------------------------------------------------------------------- the rules

class Rules:
    """The GIL hand-over places of one CPython version. Immutable; any thread may call.

    name      e.g. "CPython 3.12 (GIL)"
    warmup    executions of an instruction before CPython runs it specialized: `warm` is
              True from the (warmup+1)-th execution on
    note      what is approximate for this version ('' when nothing)
    """

    def __init__(self, name, version, warmup, checking_opcodes, conditional_opcodes,
                 no_check_when_warm, check_after_python_call, note="", everything=False):
        self.name = name
        self.version = version
        self.warmup = warmup
        self.note = note
        self.free_threaded = everything
        self._checking = frozenset(checking_opcodes)
        self._conditional = frozenset(conditional_opcodes)
        self._no_check_when_warm = no_check_when_warm  # callable(func, nargs) -> bool
        self._after_py = check_after_python_call
        self._everything = everything

    def __repr__(self):
        return "<Rules %s warmup=%d>" % (self.name, self.warmup)

    # -- the API the engine codes against -------------------------------------------------

    def at_entry(self, code):
        """Entering a Python function (its first instruction) can hand the GIL over.

        3.10: the first pass through the top of the dispatch loop checks (ceval.c
        _PyEval_EvalFrameDefault, `main_loop:` "if (_Py_atomic_load_relaxed(eval_breaker))"),
        the first opcode of a function is never one of the exempt SETUP_FINALLY/SETUP_WITH/
        BEFORE_ASYNC_WITH/YIELD_FROM. 3.11-3.14: RESUME with oparg < 2 checks (3.11 ceval.c
        TARGET(RESUME_QUICK); 3.12 bytecodes.c inst(RESUME); 3.13/3.14 bytecodes.c
        _CHECK_PERIODIC_IF_NOT_YIELD_FROM; the specialized RESUME_CHECK deopts to RESUME when
        the eval breaker is set). NB conservative: a generator or coroutine resumed after
        `yield from`/`await` (RESUME oparg 2/3) does not check; this says True for it too.
        """
        return True

    def at_opcode(self, opname, warm, jumped=None):
        """True if the interpreter checks the eval breaker at (or right after, with no
        access in between) instruction `opname` of watched code, in the form it has when
        `warm`. `jumped` (optional): whether a conditional jump was taken; None = unknown,
        answered conservatively (True for a conditional jump that checks when taken)."""
        if self._everything:
            return True
        if opname in self._checking:
            return True
        if opname in self._conditional:
            return True if jumped is None else bool(jumped)
        return False

    def after_c_call(self, func, warm, nargs=None):
        """A CALL of watched code called the C callable (or class) `func`, which returned.
        True if the CALL form used (specialized when `warm`) checks the eval breaker after
        it. `nargs` (optional): the positional argument count, for `type(x)` vs
        `type(name, bases, ns)`. sys.setprofile reports no 'c_call' for classes
        (dict(...), zip(...), type(x)); ask with the class anyway when the callee is known,
        and answer True when it is not."""
        return self.after_call(func, warm, nargs)

    def after_call(self, callee, warm, nargs=None):
        """Like after_c_call, for any callee of a CALL instruction of watched code,
        Python functions included (not for functions run by a slot: property getters,
        __eq__, __getattr__, ...; those return into an instruction that does not check)."""
        if self._everything:
            return True
        if _is_python_function(callee):
            return self._after_py
        if not warm:
            return True          # generic CALL/PRECALL: check after any non-inlined call
        return not self._no_check_when_warm(callee, nargs)

    def at_exception_handler(self):
        """A raised exception is about to be handled in watched code (after an 'exception'
        event the frame goes on). 3.10: exception_unwind jumps to the handler with
        "goto main_loop" (ceval.c _PyEval_EvalFrameDefault), through the eval-breaker check
        at the top of the loop (measured). 3.11+: the handler is dispatched directly
        (ceval.c 3.11 exception_unwind: JUMPTO(handler); DISPATCH()), no check."""
        return self._everything or self.version == (3, 10) or self.version < (3, 10)

    def blocking(self, func):
        """`func` (a C callable) may release the GIL while it runs: a switch point."""
        qn = _qualname(func)
        if qn in _BLOCKING_QUALNAMES:
            return True
        tail = qn.rsplit(".", 1)[-1]
        return tail in _BLOCKING_NAMES and not _is_python_function(func)


def _is_python_function(obj):
    return hasattr(obj, "__code__") and not isinstance(obj, type)


# -- specialized CALL forms that do not check the eval breaker ----------------------------

def _no_check_never(func, nargs):
    return False


def _no_check_311_plus(func, nargs):
    """The specialized call forms without an eval-breaker check, 3.11 to 3.14:

    len(x)            3.11 ceval.c TARGET(PRECALL_NO_KW_LEN); 3.12 bytecodes.c
                      inst(CALL_NO_KW_LEN); 3.13/3.14 bytecodes.c inst(CALL_LEN): no
                      CHECK_EVAL_BREAKER / _CHECK_PERIODIC
    isinstance(x, t)  PRECALL_NO_KW_ISINSTANCE / CALL_NO_KW_ISINSTANCE / CALL_ISINSTANCE
    type(x)           PRECALL_NO_KW_TYPE_1 / CALL_NO_KW_TYPE_1 / CALL_TYPE_1
    lst.append(x)     PRECALL_NO_KW_LIST_APPEND / CALL_NO_KW_LIST_APPEND / CALL_LIST_APPEND
                      ("secretly a super-instruction": skips the POP_TOP). NB specialize.c
                      specializes it only when the result is discarded (next op POP_TOP) and
                      the call is `lst.append(v)` (oparg 1): `y = lst.append(v)` and
                      `list.append(lst, v)` stay checking forms; this says no check for them.

    Specialization: specialize.c _Py_Specialize_Call / _Py_Specialize_Precall (3.11),
    specialize_c_call (METH_O + callable_cache.len and nargs 1; METH_FASTCALL +
    callable_cache.isinstance and nargs 2), specialize_class_call (PyType_Type and nargs 1),
    specialize_method_descriptor (callable_cache.list_append). Every other specialized call
    form checks: CALL_BUILTIN_O/FAST/FAST_WITH_KEYWORDS, CALL_BUILTIN_CLASS (dict(...),
    zip(...)), CALL_STR_1, CALL_TUPLE_1, CALL_METHOD_DESCRIPTOR_* (3.13/3.14: macro ...
    + _CHECK_PERIODIC; 3.11/3.12: CHECK_EVAL_BREAKER() at the end of each).
    """
    if func is builtins.len or func is builtins.isinstance:
        return True
    if func is type:
        return nargs == 1        # nargs unknown: conservative (check)
    return _is_list_append(func)


# -- per version ----------------------------------------------------------------------------

def _make(version):
    v = version
    name = "CPython %d.%d (GIL)" % v
    if v == (3, 10):
        # ceval.c _PyEval_EvalFrameDefault: DISPATCH() goes straight to the next opcode; only
        # CHECK_EVAL_BREAKER() ("continue" to the top of the loop) and the first pass check.
        # CHECK_EVAL_BREAKER() is in TARGET(JUMP_ABSOLUTE) (every backward jump of 3.10),
        # TARGET(POP_JUMP_IF_FALSE/TRUE) when the jump is taken, and at the end of
        # TARGET(CALL_FUNCTION), TARGET(CALL_METHOD), TARGET(CALL_FUNCTION_KW),
        # TARGET(CALL_FUNCTION_EX), whatever the callee (Python functions included).
        # No specialization in 3.10 (the opcache of LOAD_GLOBAL/LOAD_ATTR, activated after
        # 1024 calls of a code object, changes no check): warm makes no difference.
        return Rules(name, v, warmup=0,
                     checking_opcodes={"JUMP_ABSOLUTE"},
                     conditional_opcodes={"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"},
                     no_check_when_warm=_no_check_never, check_after_python_call=True)
    if v == (3, 11):
        # ceval.c (3.11): TARGET(RESUME_QUICK) and TARGET(JUMP_BACKWARD_QUICK) check
        # (CHECK_EVAL_BREAKER), JUMP_BACKWARD_NO_INTERRUPT does not (await/yield from loops);
        # POP_JUMP_BACKWARD_IF_{FALSE,TRUE,NONE,NOT_NONE} check when the jump is taken.
        # TARGET(CALL): Python functions are inlined ("goto start_frame": the callee's RESUME
        # checks, no check after the return); any other callee: CHECK_EVAL_BREAKER() after.
        # Warmup (Include/internal/pycore_code.h): a code object is quickened when
        # co_warmup reaches 0; QUICKENING_WARMUP_DELAY 8 and _PyCode_Warmup, called by RESUME
        # and JUMP_BACKWARD, add 1 each; _PyCode_Quicken then installs the adaptive forms with
        # a zero counter ("Make sure the adaptive counter is zero"), so they specialize on
        # their next execution. An instruction run once per call is specialized from its
        # 8th execution on (measured: 7 earlier calls). NB approximate: the count is per code
        # object, so a loop or another instruction can quicken the code earlier; then the
        # engine calls a specialized instruction cold (allows a switch that does not exist).
        return Rules(name, v, warmup=7,
                     checking_opcodes={"RESUME", "JUMP_BACKWARD"},
                     conditional_opcodes={"POP_JUMP_BACKWARD_IF_FALSE",
                                          "POP_JUMP_BACKWARD_IF_TRUE",
                                          "POP_JUMP_BACKWARD_IF_NONE",
                                          "POP_JUMP_BACKWARD_IF_NOT_NONE"},
                     no_check_when_warm=_no_check_311_plus, check_after_python_call=False,
                     note="warmup counted per code object (8 RESUME/JUMP_BACKWARD), "
                          "approximated per instruction")
    if v in ((3, 12), (3, 13), (3, 14)):
        # 3.12 bytecodes.c: inst(RESUME) (oparg < 2) and inst(JUMP_BACKWARD) check
        # (CHECK_EVAL_BREAKER); conditional jumps are forward only; JUMP_BACKWARD_NO_INTERRUPT
        # does not check. NB 3.12 ends an `except` block with a JUMP_BACKWARD to the code
        # after the `try` when that code is not duplicated (measured: a check); 3.13 uses
        # JUMP_BACKWARD_NO_INTERRUPT there. 3.13 bytecodes.c: inst(JUMP_BACKWARD)
        # CHECK_EVAL_BREAKER, RESUME via _CHECK_PERIODIC; 3.14 bytecodes.c: macro(RESUME) ...
        # + _CHECK_PERIODIC_IF_NOT_YIELD_FROM, JUMP_BACKWARD and its JIT/NO_JIT
        # specializations with _CHECK_PERIODIC.
        # Generic CALL (and CALL_KW in 3.13+, CALL_FUNCTION_EX): CHECK_EVAL_BREAKER /
        # _CHECK_PERIODIC after a non-Python callee (3.13/3.14 macro(CALL_NON_PY_GENERAL) =
        # ... + _CHECK_PERIODIC); Python callees are pushed as a frame (DISPATCH_INLINED /
        # _PUSH_FRAME in CALL_PY_EXACT_ARGS, CALL_PY_GENERAL, CALL_BOUND_METHOD_*,
        # CALL_ALLOC_AND_ENTER_INIT) and checked by their RESUME, not after the return.
        # Warmup (Include/internal/pycore_code.h 3.12/3.13, pycore_backoff.h 3.14):
        # code is quickened at creation; ADAPTIVE_WARMUP_VALUE 1 ("we attempt to specialize
        # the *second* time each instruction is executed"): first execution generic,
        # specialized from the second.
        note = ""
        if v == (3, 14):
            note = "3.14 from its source only (not measured on this machine)"
        return Rules(name, v, warmup=1,
                     checking_opcodes={"RESUME", "JUMP_BACKWARD"},
                     conditional_opcodes=(),
                     no_check_when_warm=_no_check_311_plus, check_after_python_call=False,
                     note=note)
    raise ValueError(version)


def _everything(name, version, note):
    return Rules(name, version, warmup=0, checking_opcodes=(), conditional_opcodes=(),
                 no_check_when_warm=_no_check_never, check_after_python_call=True,
                 note=note, everything=True)


def rules_for(version, free_threaded=False):
    """The rules of CPython `version` ((major, minor), extra fields ignored).

    free_threaded: no GIL: every at_*/after_* answers True (every access is a point).
    Before 3.10 (not modelled): every instruction is a point, which is conservative (3.9
    checked at the top of the loop for most instructions). After 3.14: the 3.14 rules,
    with a note that they are assumed.
    """
    v = (int(version[0]), int(version[1]))
    if free_threaded:
        return _everything("CPython %d.%d (free-threaded)" % v, v,
                           "no GIL: threads run in parallel, every access is a point")
    if v in KNOWN_VERSIONS:
        return _make(v)
    if v < KNOWN_VERSIONS[0]:
        return _everything("CPython %d.%d (GIL, not modelled: every instruction a point)" % v,
                           v, "versions before 3.10 are not modelled; conservative")
    r = _make(KNOWN_VERSIONS[-1])
    r.name = "CPython %d.%d (GIL, assumed like 3.14)" % v
    r.version = v
    r.note = ("not modelled: the rules of 3.14 are assumed; check with "
              "tools/experiments/gil_storm.py probe")
    return r


def rules_for_running():
    """The rules for the interpreter running this code."""
    gil_check = getattr(sys, "_is_gil_enabled", None)
    free = gil_check is not None and not gil_check()
    return rules_for(sys.version_info[:2], free_threaded=free)
