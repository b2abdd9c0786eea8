"""One replay run: the forked child that replays the program once under the controller.

For each ``run`` line the set-up process forks (serve.py); the child starts from the pristine
state ``Setup`` left (engine_setup.py), so runs are independent. ``_child`` makes the run's
``control.Run``, installs this child's copy of the GIL tracer, runs the serial prewarm if asked,
and starts one logical thread per recorded thread (an OS thread, or a greenlet: logical.py).
Each (``_worker``) replays its recorded operations: a tuner call goes through the real tuner
(``_replay_call``) with fake tensors for its in-parameters; an exception the call raises is a
finding (``_classify`` names the program's frame and, for the known races, the other thread).
The run ends when the controller says ``e`` (control.py); the child never returns.

``serve_here`` is the long-lived child of ``here`` lines (serve.py): ``_run_here`` is a run as
``_child``'s that comes back to it at ``e`` (greenlets or OS threads), with fresh thread
states, and between two runs reset.py puts back what the run changed (or the child exits:
serve.py forks another).

Everything here runs in the child: ``_child`` in its main thread, the rest in the logical
thread that holds the turn.
"""

import json
import os
import random
import sys
import threading
import traceback

from . import control, fakes, tuners, watchdog

_FIELD_WORDS = {
    "in-param-not-in-cache": "In-parameter {name} is not in the cache: {who}",
    "nargs-none": "nargs is None while thread {tid} runs {fn}: {who}",
}


def _program_frame(tb):
    """(file, line, function) of the innermost frame of traceback `tb` outside rerace's own
    code, or None. The same three as ``traceback.extract_tb`` gives (``tb_lineno`` is the line
    of the instruction's position, ``co_name`` the name), without its source lookup: that stats
    and reads every file of the traceback, in a fresh child each run (3 of 8 ms a run)."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not control.is_ours(code.co_filename):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    code = found.tb_frame.f_code
    return code.co_filename, found.tb_lineno, code.co_name


def _classify(e, ts, run):
    frame = _program_frame(e.__traceback__)
    where = "%s:%d in %s" % (control.site_path(frame[0]), frame[1], frame[2]) if frame else ""
    etype = type(e).__name__
    msg = str(e) if not isinstance(e, KeyError) else repr(e.args[0]) if e.args else ""
    out = {"type": etype, "message": msg, "where": where, "code": "exception",
           "words": "the call raised %s" % etype, "other": -1, "other_step": -1}
    fn = frame[2] if frame else "?"
    restore = ts.call.get("_restore", []) if ts.call else []
    if isinstance(e, KeyError) and e.args and e.args[0] in restore:
        other, step, at = run.last_writer("restore_copies")
        out["code"] = "in-param-not-in-cache"
        who = "restore_copies was last written by thread %d %s" % (other, at) \
            if other >= 0 else "restore_copies has no copy of it"
        out["words"] = "In-parameter %s is not in the cache: %s, while thread %d ran %s" % (
            e.args[0], who, ts.tid, fn)
        out["other"], out["other_step"] = other, step
    elif isinstance(e, TypeError) and "NoneType" in msg:
        other, step, at = run.last_writer("nargs")
        out["code"] = "nargs-none"
        out["words"] = "nargs is None while thread %d runs %s: thread %d set it to None %s" % (
            ts.tid, fn, other, at)
        out["other"], out["other_step"] = other, step
    elif frame is None:
        out["code"] = "internal"
    return out


def _best(call):
    ns = call.get("bench_ns") or []
    if not ns:
        return -1
    return min(range(len(ns)), key=lambda i: (ns[i], i))


def _acceptable(program, call):
    """The configs some recorded benchmark of this call's tuner and key selected: a launch
    with one of them is right (threads' timings of one key differ by noise); a launch with a
    config no benchmark of its key selected ran another key's choice."""
    out = set()
    for c in program["calls"]:
        if c["tuner"] == call["tuner"] and c["key"] == call["key"]:
            b = _best(c)
            if b >= 0:
                out.add(b)
    return out


def _plan(setup, call):
    """What a recorded call's replay needs that is the same in every run (set-up computes it
    once, Setup.plans): the key's argument values, the names to restore, the acceptable
    configs (_acceptable looks at every call of the program)."""
    _, positional, keys = setup.tuners[call["tuner"]]
    known = (tuners.key_values(keys, positional, call["key"]) or {}) if keys else {}
    restore = [call["arg_names"][i] for i in call["restore_value"] if i < len(call["arg_names"])]
    return known, restore, _acceptable(setup.program, call)


def _call_args(setup, call_index, tid):
    call = setup.program["calls"][call_index]
    tuner, positional, keys = setup.tuners[call["tuner"]]
    known, restore, best = setup.plans[call_index]
    args = {}
    values = [] if keys else [call["key"]]
    for name in positional:
        if name in known:
            values.append(known[name])
            continue
        t = fakes.FakeTensor(tid, name)
        args[name] = t
        values.append(t)
    c = dict(call)
    c.update(_tuner=tuner, _args=args, _restore=list(restore), _best=best,
             _reps=setup.cfg.get("reps", 1))
    return tuner, values, c


def _replay_call(setup, run, ts, call_index):
    """Makes the recorded call through the real tuner; returns the finding of the exception it
    raised, or None."""
    tuner, values, c = _call_args(setup, call_index, ts.tid)
    ts.call = c
    reached = setup.reach.replaced and ts.tid >= 0
    if reached:
        setup.reach.start_call(c)
    try:
        tuner[(1,)](*values)
        return None
    except BaseException as e:  # noqa: BLE001 - the program's exception, reported
        _untrace(run, ts)
        f = _classify(e, ts, run)
        if f["code"] == "internal":
            f["words"] += ": " + "".join(traceback.format_exception_only(type(e), e)).strip()
        return f
    finally:
        ts.call = None
        if reached:
            with control.Unseen():
                run.post("r", json.dumps(setup.reach.report(c), sort_keys=True))


def _reach_profile(setup):
    """Patch reach's profile function for a replaying thread, or None (nothing replaced).
    With greenlets one profile serves every logical thread of the OS thread: it skips a
    thread whose events have stopped (_untrace)."""
    if not setup.reach.replaced:
        return None
    check = setup.reach.profile
    if control.GREENLET is not None:
        local = control._local

        def profile(frame, event, arg):
            ts = getattr(local, "ts", None)
            if ts is not None and ts.traced:
                check(frame, event)
        return profile
    return lambda frame, event, arg: check(frame, event)


def _untrace(run, ts):
    """The thread's tracer and profile events stop (its task ended, or is ending by an
    exception)."""
    if run.tracer is not None:
        run.tracer.thread_stop(ts)
    elif control.GREENLET is not None:
        ts.traced = False  # the profile is the OS thread's, shared (_reach_profile)
    else:
        sys.setprofile(None)


_ORDER_LOCK = "recorded order"


def _order_done(run):
    done = getattr(run, "order_done", None)
    if done is None:
        done = run.order_done = set()
    return done


def _wait_for_calls(setup, run, call_index):
    """The program's own synchronization as recorded (and --order-from-timing): call
    `call_index` begins once each call it follows has ended. The wait is the program's, at
    rerace's scheduler: a controlled lock and one condition per call waited for, so DPOR sees
    the order and a run that cannot go on is a deadlock naming the call."""
    after = setup.program["calls"][call_index].get("after")
    if not after:
        return
    done = _order_done(run)
    run.sync("a", _ORDER_LOCK, "recorded order: Lock.acquire")
    for b in after:
        while b not in done:
            run.sync("w", "recorded order: call %d" % b, _ORDER_LOCK,
                     "recorded order: wait for call %d to end" % b)
    run.sync("u", _ORDER_LOCK, "recorded order: Lock.release")


def _calls_ended(setup, run, calls):
    """Calls that ended (or that will not run: their thread's task ended by an exception, as
    in the model): the calls that follow them may begin."""
    waited = setup.waited_calls
    done = _order_done(run)
    new = [c for c in calls if c in waited and c not in done]
    if not new:
        return
    run.sync("a", _ORDER_LOCK, "recorded order: Lock.acquire")
    for c in new:
        done.add(c)
        run.sync("n", "recorded order: call %d" % c, 1, "recorded order: call %d ended" % c)
    run.sync("u", _ORDER_LOCK, "recorded order: Lock.release")


def _worker(setup, run, tracer, ts, ops):
    control._local.ts = ts
    if tracer is not None:
        tracer.thread_start(_reach_profile(setup))
    elif control.GREENLET is None:
        sys.setprofile(_reach_profile(setup))
    if control.GREENLET is None:
        ts.baton.acquire()
    own = [op[1] for op in ops if op[0] == "call"]
    try:
        for op in ops:
            kind = op[0]
            if kind == "call":
                _wait_for_calls(setup, run, op[1])
                f = _replay_call(setup, run, ts, op[1])
                if f is not None:
                    run.finding(**f)
                    break  # as in the real program, the exception ends this thread's task
                _calls_ended(setup, run, [op[1]])
            elif kind == "launch":
                run.opportunity()
                run.advance(op[1])
            elif kind == "sync":
                run.opportunity()
        _calls_ended(setup, run, own)
    except BaseException as e:  # noqa: BLE001
        run.internal("thread %d: %s" % (ts.tid, "".join(traceback.format_exception(type(e), e, e.__traceback__))))
    _untrace(run, ts)
    if control.GREENLET is not None:
        from . import logical
        logical.unregister(ts)  # no longer alive to threading, as a thread that ended
    run.threads_done += 1
    run.send("x")
    try:
        run.hand_on()
    except control.RunEnded:
        pass  # this thread read the run's end (OS threads in a shared process: _run_here)


def _prewarm(setup, run, tracer):
    """Each (tuner, key) once, serially, before the threads start (no scheduling points; the
    tracer counts the executions, so the code is as warm as the real prewarm left it)."""
    ts = control.ThreadState(-1, "prewarm")
    ts.quiet = 1
    control._local.ts = ts
    if tracer is not None:
        tracer.thread_start()
    done = set()
    for i, call in enumerate(setup.program["calls"]):
        k = (call["tuner"], call["key"])
        if k in done:
            continue
        done.add(k)
        f = _replay_call(setup, run, ts, i)
        if f is not None:
            run.internal("the serial prewarm call %d raised %s: %s at %s" % (
                i, f["type"], f["message"], f["where"]))
    if tracer is not None:
        tracer.thread_stop(ts)
    control._local.ts = None


def _child(setup, rfd, wfd, leftover=b""):
    random.setstate(setup.random_state)  # as set-up left it: the fork reseeded it
    watchdog.stacks_on_signal(True)
    if control._DEBUG:
        import faulthandler
        faulthandler.dump_traceback_later(4, exit=True)
    run = control.Run(rfd, wfd, setup.free_threaded, setup.rules)
    run.buf = leftover
    control.RUN = run
    tracer = setup.tracer  # this child's copy (fork), with no counts yet
    if tracer is not None:
        tracer.install()
    run.tracer = tracer
    if setup.cfg.get("prewarm"):
        _prewarm(setup, run, tracer)
    states = setup.states  # this child's copies (fork), as set-up made them
    run.threads = states
    if control.GREENLET is not None:
        from . import logical
        if tracer is None:
            sys.setprofile(_reach_profile(setup))
        main = control.GREENLET.getcurrent()
        for t, th in enumerate(setup.program["threads"]):
            logical.register(states[t])  # a live thread to threading (current_thread)
            states[t].glet = control.GREENLET.greenlet(
                lambda ts=states[t], ops=th["ops"]: _worker(setup, run, tracer, ts, ops),
                parent=main)
        run.hand_on()
        # A logical thread hands the turn on when it ends, and the run ends in one (e): never
        # back here.
        run.internal("a logical thread ended without handing the turn on")
    workers = []
    for t, th in enumerate(setup.program["threads"]):
        w = threading.Thread(target=_worker, args=(setup, run, tracer, states[t], th["ops"]),
                             name=th["name"], daemon=True)
        w.start()
        workers.append(w)
    run.hand_on()
    for w in workers:
        w.join()
    os._exit(0)


def _run_here(setup, rfd, wfd, leftover):
    """One run in the process whose runs share it (serve_here): ``_child``'s run, back here
    when the controller ends it (``e``: control.Run.main), with fresh thread states. Returns
    whether it ended with every logical thread ended, each of them then at its final hand-over
    (nothing of the program on its stack; OS threads: joined)."""
    random.setstate(setup.random_state)
    run = control.Run(rfd, wfd, setup.free_threaded, setup.rules)
    run.buf = leftover
    control.RUN = run
    tracer = setup.tracer
    if tracer is not None:
        tracer.install()
    run.tracer = tracer
    if control.GREENLET is not None:
        clean = _run_greenlets_here(setup, run, tracer)
    else:
        clean = _run_threads_here(setup, run, tracer)
    if tracer is not None:
        tracer.end_run()
    control.RUN = None
    return clean


def _run_greenlets_here(setup, run, tracer):
    from . import logical
    main = run.main = control.GREENLET.getcurrent()
    states = []
    try:
        if setup.cfg.get("prewarm"):
            _prewarm(setup, run, tracer)
        states = run.threads = setup.new_states()
        if tracer is None:
            sys.setprofile(_reach_profile(setup))
        for t, th in enumerate(setup.program["threads"]):
            logical.register(states[t])
            states[t].glet = control.GREENLET.greenlet(
                lambda ts=states[t], ops=th["ops"]: _worker(setup, run, tracer, ts, ops),
                parent=main)
        run.hand_on()
    except control.RunEnded:
        pass
    control._local.ts = None
    sys.setprofile(None)
    sys.settrace(None)
    clean = (len(states) == len(setup.program["threads"]) and run.threads_done == len(states)
             and not run.buf)
    if clean:
        # Each finished thread waits in its last hand_on, below the program's frames: ended
        # here (GreenletExit runs no code of the program).
        for ts in states:
            if ts.glet is not None and not ts.glet.dead:
                ts.glet.throw()
    return clean


def _run_threads_here(setup, run, tracer):
    """OS threads: the thread that reads ``e`` lets this one go (control.Run.ended); at the end
    of a clean run it is the last thread, which then ends, and every thread is joined."""
    import _thread
    run.main = _thread.get_ident()
    run.ended = _thread.allocate_lock()
    run.ended.acquire()
    workers = []
    try:
        if setup.cfg.get("prewarm"):
            _prewarm(setup, run, tracer)
        states = run.threads = setup.new_states()
        for t, th in enumerate(setup.program["threads"]):
            w = threading.Thread(target=_worker, args=(setup, run, tracer, states[t], th["ops"]),
                                 name=th["name"], daemon=True)
            w.start()
            workers.append(w)
        run.hand_on()
    except control.RunEnded:
        pass
    run.ended.acquire()
    clean = (len(workers) == len(setup.program["threads"]) and run.threads_done == len(workers)
             and not run.buf)
    if clean:
        for w in workers:
            w.join()
    return clean


def serve_here(setup, rfd, wfd, gate, ack, leftover):
    """The long-lived child of the ``here`` lines (serve.py): a run, then, when the state it
    changed is put back (reset.py), ``k`` on `ack` and the next run's first bytes from `gate`
    (a length, a newline, the bytes the set-up process read past its ``here``). A run that
    leaves what cannot be put back ends the process instead (the set-up process sees `ack`
    close, answers ``done`` and forks a fresh one for the next). Never returns."""
    import gc
    from . import reset
    watchdog.stacks_on_signal(True)
    pristine = reset.Pristine(setup, *reset.roots_of(setup))
    gc.collect()
    gc.freeze()  # set-up's objects: the collection after each run looks at the run's only
    debug = control._DEBUG or os.environ.get("RERACE_ENGINE_RESET_DEBUG")
    runs = 0
    while True:
        clean = _run_here(setup, rfd, wfd, leftover)
        runs += 1
        why = pristine.restore() if clean else "not every thread ended"
        gc.collect()
        if why is not None:
            if debug:
                os.write(2, ("rerace engine: a fresh process after %d runs: %s\n" % (
                    runs, why)).encode())
            os._exit(0)
        os.write(ack, b"k")
        leftover = _read_gate(gate)
        if leftover is None:
            os._exit(0)


def _read_gate(fd):
    """The next run's first bytes (serve.py's _open_gate framing), or None at the end."""
    buf = b""
    while b"\n" not in buf:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\n")
    n = int(head)
    while len(rest) < n:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        rest += chunk
    return rest
