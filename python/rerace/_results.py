"""The result objects: what ``rerace replay|fuzz|check --json`` prints, as Python objects.

Every ``from_json`` takes the parsed JSON of one command and keeps the raw dict in ``.json``
for anything not surfaced as an attribute. The repr of a failing result carries the
counterexample and the command that replays it, so a failing ``assert`` shows both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ._run import invoked_name, shell


def _get(d: dict[str, Any], key: str, default: Any) -> Any:
    """``d[key]``, or ``default`` where it is absent or null (the JSON writes null for what a
    result lacks: docs/JSON.md)."""
    v = d.get(key)
    return default if v is None else v


def engine_named(base: list[str], engine: str) -> list[str]:
    """A replay command's options naming the engine that ran (``engine``: the JSON's, "python:
    ..." or "model ..."), so that it replays the same code whatever the default (auto) finds."""
    if "--engine" in base or not engine:
        return list(base)
    if engine.startswith("python"):
        return ["--engine", "python", *base]
    out, skip = ["--engine", "model"], False
    for a in base:  # the model runs no Python
        if skip:
            skip = False
        elif a == "--python-exe":
            skip = True
        else:
            out.append(a)
    return out


@dataclass(frozen=True)
class Finding:
    """One failure a run saw: ``kind`` (e.g. ``nargs-none``, ``wrong-restore``), the thread
    (``thread``, ``thread_name``), the step, ``place`` (``triton/runtime/autotuner.py:233 in
    benchmark``), the exception (``type``, ``message``; ``silent`` for a corruption that raised
    nothing) and ``words``, the one-sentence story of how it came about."""

    kind: str
    thread: int
    thread_name: str
    step: int
    place: str
    type: str
    message: str
    words: str
    silent: bool

    @property
    def code(self) -> str:
        """``kind`` under the JSON's name (``"code"``)."""
        return self.kind

    @property
    def where(self) -> str:
        """``place`` under the JSON's name (``"where"``)."""
        return self.place

    @property
    def exception(self) -> str:
        """The exception as Python raised it (``"KeyError: 'y_ptr'"``); "" for a silent finding."""
        if not self.type or self.silent:
            return ""
        return self.type if not self.message else f"{self.type}: {self.message}"

    @property
    def traceback(self) -> str:
        """The finding as the text report prints it: exception and the place it was raised."""
        if self.silent:  # it raised nothing (the JSON's type and message are null)
            exc = "(silent corruption: nothing raised)"
        else:
            exc = self.type if not self.message else f"{self.type}: {self.message}"
        return f"{exc}\n  at {self.place}"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Finding":
        return cls(kind=_get(d, "code", ""), thread=int(_get(d, "thread", -1)),
                   thread_name=_get(d, "thread_name", ""), step=int(_get(d, "step", 0)),
                   place=_get(d, "where", ""), type=_get(d, "type", ""),
                   message=_get(d, "message", ""), words=_get(d, "words", ""),
                   silent=bool(_get(d, "silent", False)))

    def __str__(self) -> str:
        return (f"{self.kind} in thread {self.thread} ({self.thread_name}) at step {self.step}: "
                f"{self.traceback.splitlines()[0]} at {self.place}; {self.words}")


@dataclass(frozen=True)
class Run:
    """One replay: whether it ``failed``, its ``findings``, the ``schedule`` line that replays it
    exactly, and ``replay_command``, the command line that does (``rerace replay ... --schedule``)."""

    trace: str
    fix: str
    engine: str
    strategy: str
    failed: bool
    steps: int
    findings: list[Finding]
    schedule: str
    replay_command: str
    patch_reach: list[str] = field(default_factory=list)
    json: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], base: list[str]) -> "Run":
        """``base``: the replay command's options besides trace and schedule (fix, engine...)."""
        schedule = _get(d, "schedule", "")
        cmd = [invoked_name(), "replay", _get(d, "trace", ""), "--schedule", schedule,
               *engine_named(base, _get(d, "engine", ""))]
        return cls(trace=_get(d, "trace", ""), fix=_get(d, "fix", ""), engine=_get(d, "engine", ""),
                   strategy=_get(d, "strategy", ""), failed=bool(_get(d, "failed", False)),
                   steps=int(_get(d, "steps", 0)),
                   findings=[Finding.from_json(f) for f in d.get("findings", [])],
                   schedule=schedule, replay_command=shell(cmd) if schedule else "",
                   patch_reach=list(_get(d, "patch_reach", [])), json=d)

    def describe(self) -> str:
        lines = [f"{len(self.findings)} finding(s) under {self.strategy}:"]
        lines += [f"  {f}" for f in self.findings]
        lines += [f"  patch reach: {r}" for r in self.patch_reach]
        if self.replay_command:
            lines.append(f"replay it: {self.replay_command}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ReplayResult(Run):
    """``rerace.replay``'s result: a Run, and ``exit_code`` (0 passed, 1 failed)."""

    exit_code: int = 0

    def __bool__(self) -> bool:
        return not self.failed

    def __repr__(self) -> str:
        head = f"ReplayResult({'FAILED' if self.failed else 'passed'}, {self.trace}, fix={self.fix}"
        if self.findings:
            f = self.findings[0]
            head += f", {f.kind} in thread {f.thread} at {f.place}"
        return head + ")"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class Search:
    """How check searched: ``method`` (dpor...), preemption ``bound``, ``runs`` of ``max_runs``,
    whether it was ``exhausted`` (the search ran to its end within its budget), ``cut``: the
    race reversals DPOR found that the bound refused, and ``complete``: an exhausted DPOR search
    with none cut, which covered every interleaving. DPOR under a bound with some cut covered
    its own schedules, not every interleaving with at most ``bound`` preemptions."""

    method: str
    bound: Optional[int]  # None where no systematic search ran
    runs: int
    max_runs: int
    exhausted: bool
    sampled: int
    probed: int
    cut: int = 0
    complete: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Search":
        return cls(method=_get(d, "method", ""), bound=None if d.get("bound") is None else int(d["bound"]),
                   runs=int(_get(d, "runs", 0)), max_runs=int(_get(d, "max_runs", 0)),
                   exhausted=bool(_get(d, "exhausted", False)), sampled=int(_get(d, "sampled", 0)),
                   probed=int(_get(d, "probed", 0)), cut=int(_get(d, "cut", 0)),
                   complete=bool(_get(d, "complete", False)))


@dataclass(frozen=True)
class Certificate:
    """``check --threads K``'s certificate: every interleaving of every sub-program of
    ``threads`` of the ``of`` recorded worker threads, searched by unbounded DPOR, one search per
    symmetry class (``classes``, standing for ``combinations``), ``runs`` in all; ``complete``
    when every class was searched to its end and none failed."""

    threads: int
    of: int
    classes: int
    combinations: int
    runs: int
    complete: bool

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Certificate":
        return cls(threads=int(_get(d, "threads", 0)), of=int(_get(d, "of", 0)),
                   classes=int(_get(d, "classes", 0)), combinations=int(_get(d, "combinations", 0)),
                   runs=int(_get(d, "runs", 0)), complete=bool(_get(d, "complete", False)))


@dataclass(frozen=True)
class CheckResult:
    """``rerace.check``'s result.

    ``verdict`` is ``"holds"`` (exit 0), ``"fails"`` (exit 1: ``counterexample`` is the failing
    Run, with its schedule and ``replay_command``) or ``"inconclusive"`` (exit 3: no
    counterexample, but the search stopped at its budget before it was exhausted; never a
    holds). ``holds`` is true only for ``"holds"``. ``cost`` is the fix's cost as check prices
    it (``cost["ratio"]`` of the step time without the fix; None where nothing is priced).

    >>> r = rerace.check("step.rrt", patch="ourfix.py")
    >>> r.verdict, r.explored, r.search.exhausted
    ('holds', 139, True)
    """

    trace: str
    fix: str
    patches: list[str]
    engine: str
    verdict: str
    explored: int
    search: Search
    counterexample: Optional[Run]
    cost: Optional[dict[str, Any]]
    exit_code: int
    command: str
    assumed: str = ""
    json: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    certificate: Optional[Certificate] = None

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"

    @property
    def fails(self) -> bool:
        return self.verdict == "fails"

    @property
    def inconclusive(self) -> bool:
        return self.verdict == "inconclusive"

    @property
    def exhausted(self) -> bool:
        return self.search.exhausted

    @property
    def findings(self) -> list[Finding]:
        return self.counterexample.findings if self.counterexample else []

    @classmethod
    def from_json(cls, d: dict[str, Any], exit_code: int, cmd: list[str],
                  replay_base: list[str]) -> "CheckResult":
        ce = d.get("counterexample")
        verdict = _get(d, "verdict", "")
        # The exit code is the command line's verdict; a JSON that disagrees is a bug in one of
        # the two, which must not read as a pass.
        expected = {0: "holds", 1: "fails", 3: "inconclusive"}.get(exit_code)
        if expected is not None and verdict != expected:
            from ._errors import Error
            raise Error(f"check printed verdict {verdict!r} but exited {exit_code} "
                        f"(expected {expected!r})", 70, cmd)
        return cls(trace=_get(d, "trace", ""), fix=_get(d, "fix", ""),
                   patches=[_get(p, "file", "") for p in d.get("patches", [])],
                   engine=_get(d, "engine", ""), verdict=verdict,
                   explored=int(_get(d, "explored", 0)),
                   search=Search.from_json(d.get("search", {})),
                   # A certificate's counterexample is a run of a sub-program: --only replays it.
                   counterexample=Run.from_json(ce, replay_base + (["--only", d["only"]]
                                                                   if d.get("only") else []))
                   if ce else None,
                   cost=d.get("cost"), exit_code=exit_code, command=shell(cmd),
                   assumed=_get(d, "assumed", ""), json=d,
                   certificate=Certificate.from_json(d["certificate"]) if d.get("certificate") else None)

    def __bool__(self) -> bool:
        return self.holds

    def describe(self) -> str:
        what = self.fix if not self.patches else f"{self.fix} + patch {', '.join(self.patches)}"
        s = self.search
        head = (f"check {self.trace} ({what}, engine {self.engine}): {self.verdict.upper()} "
                f"after {self.explored} schedule{'' if self.explored == 1 else 's'}")
        # A counterexample needs no account of the search (it may have come from the sampled
        # schedules before it, when the search's bound and budget say nothing).
        if self.counterexample is None:
            covered = ""  # what an exhausted DPOR search covered (a bound can cut it)
            if s.complete:
                covered = ", every interleaving"
            elif s.method == "dpor" and s.exhausted:
                covered = f", {s.cut} race reversal{'' if s.cut == 1 else 's'} cut by the bound"
            head += (f" ({s.method}, bound {s.bound}, "
                     f"{'exhausted' if s.exhausted else 'not exhausted'}{covered})")
            c = self.certificate
            if c is not None and c.complete:
                head += (f"; every interleaving of any {c.threads} of the {c.of} recorded threads "
                         f"({c.classes} class{'' if c.classes == 1 else 'es'} standing for "
                         f"{c.combinations} combinations; {c.runs} runs)")
        lines = [head]
        if self.counterexample is not None:
            lines.append("counterexample: " + self.counterexample.describe())
        elif self.inconclusive:
            # The JSON gives no reason; the two the command line gives, from the search.
            why = ("--bound 0 never preempts a thread, so it cannot reach a race"
                   if s.bound == 0 else "the search stopped at its budget before it was exhausted")
            lines.append(f"no counterexample, but {why}: this certifies nothing (not a holds)")
        lines.append(f"command: {self.command}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        # One line (pytest cuts an assertion's repr at 240 characters; its plugin prints the
        # whole report in a section of its own): the verdict, the first finding, the replay.
        head = f"CheckResult({self.verdict}, {self.explored} schedules"
        ce = self.counterexample
        if ce is not None and ce.findings:
            f = ce.findings[0]
            head += f", {f.kind} in thread {f.thread} at {f.place}"
        if ce is not None and ce.replay_command:
            head += f"; replay it: {ce.replay_command}"
        return head + ")"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class FuzzFailure:
    """One distinct failure fuzz found: its ``failure`` (kind at place), the ``seed`` and
    ``schedule`` that show it, and ``replay_command``."""

    failure: str
    seed: int
    schedule: str
    thread_name: str
    type: str
    message: str
    words: str
    silent: bool
    replay_command: str

    @property
    def kind(self) -> str:
        return self.failure.split(" at ", 1)[0]

    @property
    def place(self) -> str:
        return self.failure.split(" at ", 1)[1] if " at " in self.failure else ""


@dataclass(frozen=True)
class FuzzTrace:
    trace: str
    fix: str
    engine: str
    runs: int
    failing: int
    failures: list[FuzzFailure]


@dataclass(frozen=True)
class FuzzResult:
    """``rerace.fuzz``'s result: per trace, the runs, how many failed and each distinct failure
    once. ``failed`` when any run failed (exit 1)."""

    traces: list[FuzzTrace]
    exit_code: int
    command: str
    json: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def failed(self) -> bool:
        return any(t.failing for t in self.traces)

    @property
    def failures(self) -> list[FuzzFailure]:
        return [f for t in self.traces for f in t.failures]

    def __bool__(self) -> bool:
        return not self.failed

    @classmethod
    def from_json(cls, d: dict[str, Any], exit_code: int, cmd: list[str],
                  replay_base: list[str]) -> "FuzzResult":
        traces = []
        for t in d.get("traces", []):
            fails = [FuzzFailure(failure=_get(f, "failure", ""), seed=int(_get(f, "seed", 0)),
                                 schedule=_get(f, "schedule", ""),
                                 thread_name=_get(f, "thread_name", ""), type=_get(f, "type", ""),
                                 message=_get(f, "message", ""), words=_get(f, "words", ""),
                                 silent=bool(_get(f, "silent", False)),
                                 replay_command=shell([invoked_name(), "replay", _get(t, "trace", ""),
                                                       "--schedule", _get(f, "schedule", ""),
                                                       *engine_named(replay_base,
                                                                     _get(t, "engine", ""))]))
                     for f in t.get("failures", [])]
            traces.append(FuzzTrace(trace=_get(t, "trace", ""), fix=_get(t, "fix", ""),
                                    engine=_get(t, "engine", ""), runs=int(_get(t, "runs", 0)),
                                    failing=int(_get(t, "failing", 0)), failures=fails))
        return cls(traces=traces, exit_code=exit_code, command=shell(cmd), json=d)

    def __repr__(self) -> str:
        runs = sum(t.runs for t in self.traces)
        failing = sum(t.failing for t in self.traces)
        kinds = ", ".join(dict.fromkeys(f.kind for f in self.failures))
        return (f"FuzzResult({'FAILED' if self.failed else 'passed'}, {failing} of {runs} runs"
                f"{', ' + kinds if kinds else ''})")

    def __str__(self) -> str:
        lines = [repr(self)]
        for t in self.traces:
            lines.append(f"  {t.trace}: {t.failing} of {t.runs} runs failed")
            for f in t.failures:
                lines.append(f"    {f.failure} (seed {f.seed}): {f.words}")
                lines.append(f"      replay it: {f.replay_command}")
        lines.append(f"command: {self.command}")
        return "\n".join(lines)
