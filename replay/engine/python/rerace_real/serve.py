"""The engine's process: set up once, then a forked child per replay run, or one for many.

The C++ side (replay/engine/src/python_engine.cc) starts ``python -m rerace_real`` with two pipes on
standard input and output, and sends one line of JSON: the program (threads, their recorded
calls), the patches, the mode. This process then (``Setup``, engine_setup.py)

1. installs the controlled threading primitives (sync.py),
2. imports Triton and puts the fakes in place (fakes.py),
3. imports each patch file as a module, as a training script would at start-up, and notes what
   each changed in the tuner classes (so the report can say the patch took effect),
4. builds one tuner per recorded tuner object (tuners.py), never run,

and answers ``ready <json>`` (versions, the switch rules, what was replaced and patched), or
``error <kind> <message>`` and exits 2 (kind: ``env``, no usable Triton; ``data``, a patch
that does not compile or raises, a tuner the engine cannot build; ``nofile``, a patch that is
not a file; ``usage``, a patched recording without its patch; ``internal``, a bug). Then, for
each ``run`` line, it forks: the child (child.py) replays the program once under the
controller's commands (control.py) from the pristine state, so runs are independent and patch
state (a module-level lock or dict) starts fresh each time; the parent waits and answers
``done <status>``. A ``here`` line (``fuzz``'s runs: Replayer::RunInProcess) goes instead to
one long-lived child (``child.serve_here``), forked at the first: it runs the schedule, puts back
what the run changed of the set-up's state (reset.py) and says so on a pipe of its own, and this
process answers ``done 0``; a child that cannot put a run's changes back exits after that run
(this process answers as for a forked run, and forks another at the next ``here``). With
RERACE_ENGINE_IN_PROCESS=0 (``Setup.can_run_here``), ``here`` is ``run``. ``quit`` (or the end
of input) ends it.

Anything the program or Triton prints goes to standard error: the protocol has its own copies of
the descriptors. Framing: every line this side writes starts with the session token the C++ side
sent in the configuration (``control.frame``), so that a patch's stray write to the channel is a
protocol error on the C++ side, never a message. A watchdog there ends a run that makes no
progress; it signals SIGUSR1 first, and faulthandler writes every thread's stack to descriptor 3
(the hang report names where each thread is: watchdog.py).

This module is the process's main loop (``main``) and its framing on the channel.
"""

import json
import os
import signal
import sys
import traceback

from . import child, control, watchdog
# Re-exported: the tests and tools/scripts/engine-floor.py use them from here.
from .child import _program_frame, _replay_call  # noqa: F401
from .engine_setup import Setup, SetupError


def _signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


def _send(wfd, *fields):
    data = control.frame("\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields))
    data = data.encode("utf-8", "backslashreplace")
    while data:
        n = os.write(wfd, data)
        data = data[n:]


def _readline(rfd, state):
    while b"\n" not in state["buf"]:
        chunk = os.read(rfd, 65536)
        if not chunk:
            return None
        state["buf"] += chunk
    line, _, state["buf"] = state["buf"].partition(b"\n")
    return line.decode("utf-8")


# The replay child's own exit statuses besides 0 (control.py and child.py): the controller went
# away (3), an unexpected command (4), an internal error (5), an exception in _child (6).
_OWN_EXITS = (3, 4, 5, 6)


def _write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _in_child(wfd, body):
    """The forked child's way out: `body` runs the replay; an exception is reported (``!``)
    after what the run posted, and the child exits 6."""
    try:
        body()
    except BaseException:  # noqa: BLE001
        message = "python engine: " + traceback.format_exc().replace("\n", " | ")
        try:
            if control.RUN is not None:
                control.RUN.flush()  # what the run posted comes first, as it was made
        except BaseException:  # noqa: BLE001 - the error below is the one to report
            pass
        _send(wfd, "!", message)
    os._exit(6)


def _fork_run(setup, rfd, wfd, leftover, here):
    """A run in a fresh fork of this process (a ``run`` line); returns the child's pid."""
    pid = os.fork()
    if pid == 0:
        if here is not None:
            os.close(here[1])
            os.close(here[2])
        _in_child(wfd, lambda: child._child(setup, rfd, wfd, leftover))
    return pid


def _fork_here(setup, rfd, wfd, leftover):
    """The long-lived child that runs the ``here`` lines one after another (child.serve_here):
    (pid, the gate this process writes each next run's first bytes to, the pipe it answers
    ``k`` on when it is ready for the next)."""
    gate_r, gate_w = os.pipe()
    ack_r, ack_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(gate_w)
        os.close(ack_r)
        _in_child(wfd, lambda: child.serve_here(setup, rfd, wfd, gate_r, ack_w, leftover))
    os.close(gate_r)
    os.close(ack_w)
    return pid, gate_w, ack_r


def main():
    rfd = os.dup(0)
    wfd = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    watchdog.take_descriptor()
    watchdog.stacks_on_signal(True)
    state = {"buf": b""}
    line = _readline(rfd, state)
    if line is None:
        return 2
    try:
        cfg = json.loads(line)
        control.set_token(cfg.get("token", ""))
        # This interpreter runs the engine: a process that ends from here on, before "ready",
        # was ended by what the set-up imports (Triton, the tuners' modules, the patches).
        _send(wfd, "started")
        setup = Setup(cfg)
        setup.start()
    except SetupError as e:
        _send(wfd, "error", e.kind, str(e))
        return 2
    except Exception as e:  # noqa: BLE001
        _send(wfd, "error", "internal", "python engine set-up failed: %s: %s" % (type(e).__name__, e))
        traceback.print_exc()
        return 2
    _send(wfd, "ready", json.dumps(setup.info, sort_keys=True))
    # The parent waits on its child: the child's stacks say where it hangs.
    watchdog.stacks_on_signal(False)
    here = None  # the long-lived child of "here" lines: (pid, gate, ack), or None
    here_ok = bool(setup.info.get("in_process"))
    while True:
        line = _readline(rfd, state)
        if line is None or line == "quit":
            return 0
        if line not in ("run", "here"):
            _send(wfd, "error", "internal", "unknown command %r" % line)
            return 2
        sys.stdout.flush()
        sys.stderr.flush()
        # What was read past the line is the child's (the controller does not wait for it).
        leftover, state["buf"] = state["buf"], b""
        if line == "here" and here_ok:
            if here is None:
                here = _fork_here(setup, rfd, wfd, leftover)
            else:
                _write_all(here[1], b"%d\n" % len(leftover) + leftover)
            if os.read(here[2], 1) == b"k":
                _send(wfd, "done", 0)
                continue
            # It ended: the run's answer is its exit, as a forked run's.
            pid = here[0]
            os.close(here[1])
            os.close(here[2])
            here = None
        else:
            pid = _fork_run(setup, rfd, wfd, leftover, here)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            # Not rerace's way out either: the program's code (a patch's os.kill, a C extension)
            # or the system (the kernel's out-of-memory killer sends SIGKILL) ended the run.
            sig = os.WTERMSIG(status)
            _send(wfd, "q", "the replay process was killed by signal %d (%s) in the middle of a "
                  "run: a patch or the tuner code that kills its process (os.kill, a crash in a C "
                  "extension), or the kernel's out-of-memory killer (SIGKILL); the run cannot be "
                  "replayed to its end" % (sig, _signal_name(sig)))
            _send(wfd, "done", 128 + sig)
        else:
            code = os.WEXITSTATUS(status)
            if code in _OWN_EXITS:
                _send(wfd, "!", "the replay child exited with status %d" % code)
            elif code != 0:
                # Not one of rerace's own ways out: the program's code (a patch, the tuner, a
                # C extension) ended the process in the middle of the run.
                _send(wfd, "q", "the program ended the replay process in the middle of a run "
                      "(exit status %d: os._exit, or a C extension's exit, in a patch or the "
                      "tuner code); the run cannot be replayed to its end" % code)
            _send(wfd, "done", code)
