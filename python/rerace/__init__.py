"""rerace from Python: replay, fuzz and check recorded training steps, and read traces.

    import rerace

    r = rerace.check("step.rrt", patch="ourfix.py")   # the real tuner code, your patch
    assert r.holds, r                                  # a failure prints the counterexample
                                                       # and the command that replays it
    t = rerace.Trace("step.rrt")
    [th.name for th in t.threads], len(t.tuner_calls), len(t.launches)

``replay``, ``fuzz`` and ``check`` run the ``rerace`` command installed with this package
(``--json``) and return result objects (_results.py); ``Trace`` reads the file in-process
through the C++ trace reader (``rerace._core``). Anything that is not a verdict (a corrupt
trace, a missing file, a Python without Triton) raises ``rerace.Error`` with the command
line's one-line message and exit code.

By default (``engine=None``, the command's ``--engine auto``) the real tuner code runs when the
recording came from Python's Triton and ``python_exe`` (by default this interpreter) imports a
Triton of the recorded version; else rerace's C++ model (the result's ``engine`` says which;
the command's standard error, why). With ``patch`` (a Python file imported before the tuners are built) the real-code engine
runs (``engine="python"``), in ``python_exe``, so the Triton replayed is the one installed here.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Union

from ._errors import Error
from ._results import (Certificate, CheckResult, Finding, FuzzFailure, FuzzResult, FuzzTrace,
                       ReplayResult, Run, Search)
from ._run import default_python, find_exe, run_json

# Callables told of every result made (the pytest plugin prints a failing test's results in
# full: pytest cuts an assertion's repr at 240 characters).
_observers: list = []


def _made(result):
    for observe in list(_observers):
        observe(result)
    return result

__all__ = ["Error", "Trace", "Thread", "TunerCall", "Launch", "replay", "fuzz", "check",
           "ReplayResult", "CheckResult", "FuzzResult", "FuzzFailure", "FuzzTrace", "Finding",
           "Run", "Search", "Certificate", "find_exe"]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


def _common(fix: Optional[str], patch: Union[PathLike, Sequence[PathLike], None],
            engine: Optional[str], python_exe: Optional[str],
            extra: Sequence[str], model: Optional[str] = None,
            failure: Optional[str] = None) -> list[str]:
    """The options replay, fuzz and check share; also what a replay command repeats."""
    patches = [] if patch is None else [patch] if isinstance(patch, (str, os.PathLike)) else list(patch)
    if patches and engine is None:
        engine = "python"  # --patch runs only under the real-code engine
    args: list[str] = []
    if fix is not None:
        args += ["--fix", fix]
    if engine is not None:
        args += ["--engine", engine]
    if engine in (None, "python", "auto"):
        # None is the command's default, --engine auto: it tries this interpreter's Triton.
        args += ["--python-exe", python_exe or default_python()]
    elif python_exe is not None:
        args += ["--python-exe", python_exe]
    for p in patches:
        args += ["--patch", os.fspath(p)]
    if model is not None:
        args += ["--model", model]
    if failure is not None:
        args += ["--failure", failure]
    return args + list(extra)


def replay(trace: PathLike, *, seed: Optional[int] = None, schedule: Optional[str] = None,
           recorded: bool = False, fix: Optional[str] = None,
           patch: Union[PathLike, Sequence[PathLike], None] = None,
           engine: Optional[str] = None, python_exe: Optional[str] = None,
           strategy: Optional[str] = None, model: Optional[str] = None,
           failure: Optional[str] = None, only: Optional[Sequence[int]] = None,
           args: Sequence[str] = ()) -> ReplayResult:
    """Replays ``trace`` once: under ``seed`` (and ``strategy``), a saved ``schedule`` (a file
    or the ``rs1:...`` line a counterexample gives), or the ``recorded`` interleaving.

    >>> r = rerace.replay("traces/samples/triton-none-h200.rrt", seed=1)
    >>> r.engine, r.failed, r.findings[0].kind, r.findings[0].place   # this Python has Triton 3.6
    ('python', True, 'missed-restore', 'triton/runtime/autotuner.py:150 in kernel_call')
    >>> rerace.replay(r.trace, schedule=r.schedule).findings == r.findings
    True

    The keyword arguments are the command line's options of the same names (``only``: the
    recorded threads of a sub-program, ``--only``). ``args``: further command-line options
    (``["--races"]``). Raises Error on anything but a passed or failed run.
    """
    extra = list(args) + (["--only", ",".join(str(t) for t in only)] if only else [])
    common = _common(fix, patch, engine, python_exe, extra, model, failure)
    cli = ["replay", os.fspath(trace)]
    if seed is not None:
        cli += ["--seed", str(seed)]
    if schedule is not None:
        cli += ["--schedule", schedule]
    if recorded:
        cli.append("--recorded")
    if strategy is not None:
        cli += ["--strategy", strategy]
    code, data, _, _ = run_json(cli + common)
    run = ReplayResult.from_json(data, common)
    return _made(dataclasses.replace(run, exit_code=code))


def fuzz(traces: Union[PathLike, Iterable[PathLike]], *, runs: Optional[int] = None,
         seed: Optional[int] = None, fix: Optional[str] = None,
         patch: Union[PathLike, Sequence[PathLike], None] = None,
         engine: Optional[str] = None, python_exe: Optional[str] = None,
         jobs: Optional[int] = None, strategy: Optional[str] = None,
         model: Optional[str] = None, failure: Optional[str] = None,
         time: Optional[str] = None, args: Sequence[str] = ()) -> FuzzResult:
    """Replays each trace under ``runs`` seeds from ``seed``; each distinct failure once.

    >>> f = rerace.fuzz("traces/samples/triton-none-h200.rrt", runs=20)
    >>> f.failed, [x.kind for x in f.failures]
    (True, ['wrong-restore', 'wrong-restore', 'missed-restore', 'in-param-not-in-cache', 'nargs-none', 'nargs-none'])
    >>> rerace.fuzz("traces/samples/triton-none-h200.rrt", runs=20, fix="lock-run").failed
    False
    """
    paths = [os.fspath(traces)] if isinstance(traces, (str, os.PathLike)) else [os.fspath(t) for t in traces]
    common = _common(fix, patch, engine, python_exe, args, model, failure)
    cli = ["fuzz", *paths]
    if time is not None:
        cli += ["--time", time]
    if runs is not None:
        cli += ["--runs", str(runs)]
    if seed is not None:
        cli += ["--seed", str(seed)]
    if jobs is not None:
        cli += ["--jobs", str(jobs)]
    if strategy is not None:
        cli += ["--strategy", strategy]
    code, data, cmd, _ = run_json(cli + common)
    return _made(FuzzResult.from_json(data, code, cmd, common))


def check(trace: PathLike, *, fix: Optional[str] = None,
          patch: Union[PathLike, Sequence[PathLike], None] = None,
          engine: Optional[str] = None, python_exe: Optional[str] = None,
          failure: Optional[str] = None, threads: Optional[int] = None,
          jobs: Optional[int] = None, bound: Optional[int] = None,
          max_runs: Optional[int] = None, runs: Optional[int] = None,
          seed: Optional[int] = None, model: Optional[str] = None,
          args: Sequence[str] = ()) -> CheckResult:
    """Checks a fix (``fix``: a named one, e.g. ``"lock-run"``) or your ``patch`` file(s) on the
    recorded step: a counterexample, ``holds``, or ``inconclusive`` (exit 3: the search stopped
    at its budget; never a holds).

    >>> r = rerace.check("traces/samples/triton-none-h200.rrt")
    >>> r.verdict, r.counterexample.findings[0].kind
    ('fails', 'missed-restore')
    >>> print(r.counterexample.replay_command)
    rerace replay .../triton-none-h200.rrt --schedule 'rs1:6.4.5.3...' --engine python --python-exe ...
    >>> rerace.check("step.rrt", patch="ourfix.py").holds
    True

    The keyword arguments are the command line's options of the same names: ``bound``,
    ``max_runs``, ``runs``, ``seed``, ``threads`` (a certificate over every ``threads``-thread
    sub-program, ``r.certificate``), ``jobs`` (replayers at once: the certificate's classes, and
    with the real code the DPOR search's runs), ``failure``, ``model``, ``engine``,
    ``python_exe``, ``patch`` (one file or several), ``fix``; ``args`` any other.
    """
    common = _common(fix, patch, engine, python_exe, args, model, failure)
    cli = ["check", os.fspath(trace)]
    for flag, value in (("--bound", bound), ("--max-runs", max_runs), ("--runs", runs),
                        ("--seed", seed)):
        if value is not None:
            cli += [flag, str(value)]
    if threads is not None:
        cli += ["--threads", str(threads)]
    if jobs is not None:
        cli += ["--jobs", str(jobs)]
    code, data, cmd, _ = run_json(cli + common)
    return _made(CheckResult.from_json(data, code, cmd, common))


@dataclass(frozen=True)
class Thread:
    id: int
    os_tid: int
    name: str


@dataclass(frozen=True)
class TunerCall:
    """One call of an autotuner as recorded (its CallBegin): thread, kernel, key, configs."""

    thread: int
    seq: int
    tuner: int
    tuner_class: str
    kernel: str
    key: str
    configs: tuple[str, ...]


@dataclass(frozen=True)
class Launch:
    thread: int
    seq: int
    kernel: str
    device: int
    stream: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    correlation: int


class Trace:
    """A recorded trace, read and validated in-process by the C++ reader (rerace._core).

    >>> t = rerace.Trace("traces/samples/triton-none-h200.rrt")
    >>> len(t.threads), len(t.tuner_calls), t.tuner_calls[0].kernel
    (9, 8, 'l2norm_fwd_kernel')

    Raises Error (65 a corrupt trace, 66 a file that cannot be opened) with the reader's
    one-line message.
    """

    def __init__(self, path: PathLike):
        from . import _core

        d = _core.read_trace(os.fspath(path))
        self.path: str = d["path"]
        self.header: dict = d["header"]
        self.threads = [Thread(**t) for t in d["threads"]]
        self.tuner_calls = [TunerCall(**{**c, "configs": tuple(c["configs"])})
                            for c in d["tuner_calls"]]
        self.launches = [Launch(**{**l, "grid": tuple(l["grid"]), "block": tuple(l["block"])})
                         for l in d["launches"]]
        self.event_count: int = d["event_count"]
        self.truncated: bool = d["truncated"]
        self.truncation: str = d["truncation"]
        self.complete: bool = d["complete"]

    def __repr__(self) -> str:
        return (f"Trace({self.path!r}: {len(self.threads)} threads, {len(self.tuner_calls)} "
                f"tuner calls, {len(self.launches)} launches"
                f"{', truncated' if self.truncated else ''})")
