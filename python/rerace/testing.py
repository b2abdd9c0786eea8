"""Assertions for a team's tests: a failure's message is the counterexample and the command
that replays it.

    from rerace.testing import assert_holds

    def test_our_fix_holds():
        assert_holds(rerace.check("step.rrt", patch="ourfix.py"))

(``assert rerace.check(...).holds`` reads as well: pytest shows the result's repr, which
carries the same.)
"""

from __future__ import annotations

from ._results import CheckResult, FuzzResult, ReplayResult


class RaceFound(AssertionError):
    """A check that found a counterexample, or a replay or fuzz that failed; str() is the
    report."""


class Inconclusive(AssertionError):
    """A check whose search stopped at its budget (exit 3): no race was found, and nothing was
    certified either; str() says what ran."""


def assert_holds(result: CheckResult, every_interleaving: bool | int = False) -> CheckResult:
    """Passes only on ``holds``: ``fails`` raises RaceFound with the report (the counterexample's
    findings and replay command); ``inconclusive`` (no race found, the search stopped at its
    budget) and a holds that covers less than ``every_interleaving`` asks raise Inconclusive.

    A ``holds`` of DPOR under a preemption bound covers the search's schedules, not every
    interleaving within the bound (``result.search.cut`` race reversals refused by the bound).
    With ``every_interleaving=True`` only a search that covered every interleaving of the whole
    program passes (``result.search.complete``, or a certificate over all its threads); with
    ``every_interleaving=K`` (an int) a complete certificate over every K-thread sub-program
    (``check(..., threads=K)``, ``result.certificate``) passes too."""
    if result.inconclusive:
        raise Inconclusive(result.describe())
    if not result.holds:
        raise RaceFound(result.describe())
    c = result.certificate
    if every_interleaving is not True and every_interleaving:
        k = int(every_interleaving)
        if c is None or not c.complete or c.threads < k:
            got = ("no certificate (give check(..., threads=K))" if c is None else
                   f"a certificate over {c.threads} of {c.of} threads"
                   f"{'' if c.complete else ', not complete'}")
            raise Inconclusive(f"holds, but not for every interleaving of any {k} threads: "
                            f"{got}\n{result.describe()}")
        return result
    if every_interleaving and c is not None and c.complete and c.threads == c.of:
        return result
    if every_interleaving and not result.search.complete:
        s = result.search
        raise Inconclusive(f"holds, but not for every interleaving: the {s.method} search at bound "
                        f"{s.bound} ran {s.runs} schedules and the bound refused {s.cut} race "
                        f"reversal{'' if s.cut == 1 else 's'} it found\n{result.describe()}")
    return result


def assert_fails(result: CheckResult) -> CheckResult:
    """For a test that pins a known race (the stock tuner fails): passes only on ``fails``."""
    if not result.fails:
        raise RaceFound(f"expected a counterexample, got {result.verdict}\n{result.describe()}")
    return result


def assert_passes(result: ReplayResult | FuzzResult) -> ReplayResult | FuzzResult:
    """A replay or fuzz in which nothing failed."""
    if result.failed:
        raise RaceFound(str(result))
    return result
