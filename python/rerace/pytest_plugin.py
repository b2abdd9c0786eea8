"""rerace's pytest plugin (entry point ``pytest11``: loaded by pytest once rerace is installed).

Fixture ``rerace``: the module, with ``check``, ``replay`` and ``fuzz`` that run the engine
in the test's interpreter; so a test reads

    def test_ourfix(rerace):
        assert rerace.check("step.rrt", patch="ourfix.py").holds

and a failing one prints the verdict, the counterexample (kind, thread, place of each finding)
and the command that replays it: every result a failing test made that did not hold or pass
is printed in full in a section of its own ("rerace"), whether or not it came through the
fixture. ``--rerace-python`` runs the real-code engine in another
Python (one with the Triton of the recording).
"""

from __future__ import annotations

import functools
import types

import pytest

from ._results import CheckResult, FuzzResult, ReplayResult


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rerace")
    group.addoption("--rerace-python", default=None,
                    help="the Python that runs rerace's real-code engine (default: this one)")


def pytest_assertrepr_compare(op, left, right):
    # `assert r.holds == True` and the like: show the report, not two booleans.
    for side in (left, right):
        if isinstance(side, (CheckResult, ReplayResult, FuzzResult)):
            return [f"rerace result {op} ...", *str(side).splitlines()]
    return None


@pytest.fixture
def rerace(request: pytest.FixtureRequest) -> types.ModuleType:
    """The rerace module, its ``python_exe`` defaulting to ``--rerace-python`` when given."""
    import rerace as module

    exe = request.config.getoption("--rerace-python")
    if exe is None:
        return module
    ns = types.SimpleNamespace(**{k: getattr(module, k) for k in module.__all__})
    for name in ("check", "replay", "fuzz"):
        setattr(ns, name, functools.partial(getattr(module, name), python_exe=exe))
    return ns  # type: ignore[return-value]


_RESULTS = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    import rerace as module

    made: list = []
    item.stash[_RESULTS] = made
    module._observers.append(made.append)
    try:
        yield
    finally:
        module._observers.remove(made.append)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed:
        return
    bad = [r for r in item.stash.get(_RESULTS, [])
           if (isinstance(r, CheckResult) and not r.holds) or
           (isinstance(r, (ReplayResult, FuzzResult)) and r.failed)]
    if bad:
        text = "\n\n".join(str(r) for r in bad)
        report.sections.append(("rerace", text))
