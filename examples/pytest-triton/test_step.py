"""The team's race tests for the recorded training step (step.rrt: 8 threads calling one
Triton autotuner, recorded on an H200; replayed here on any machine, no GPU).

The `rerace` fixture comes from rerace's pytest plugin, installed with rerace itself (`pip install
.` in a rerace checkout, or a wheel built from one: no package index serves rerace; docs/INSTALL.md);
`check(..., patch=...)` runs the real Triton code of this interpreter with the patch applied,
under rerace's scheduler, and searches the thread interleavings for a failure."""
from pathlib import Path

import pytest

from rerace.testing import assert_fails

HERE = Path(__file__).parent
STEP = HERE / "step.rrt"


def test_stock_autotuner_races(rerace):
    # No patch: the default engine runs this interpreter's Triton (its C++ model where that
    # Triton is not the recorded release); the race of the incident is found.
    assert_fails(rerace.check(STEP))


def test_ourfix_holds(rerace):
    assert rerace.check(STEP, patch=HERE / "ourfix.py").holds


# Fails, on purpose: `make test-pip` runs it and expects exit 1 with the counterexample.
@pytest.mark.bad_patch
def test_lock_bench_holds(rerace):
    assert rerace.check(STEP, patch=HERE / "lock_bench.py").holds
