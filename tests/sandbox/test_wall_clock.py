"""The wall clock ends a run that waits; a run that computes is ended by its CPU limit, given up
to twice its wall clock when a busy machine holds it back (more runs than cores). Each backend:
a run computing a little past its wall clock passes, one that sleeps past it does not, and the
grace is bounded."""

from __future__ import annotations

import pytest

from sandbox.backends.common import WALL_GRACE
from sandbox.protocol import Limits, RunResult, Sandbox
from tests.sandbox.helpers import FAST, run

WALL = 1.0
LIMITS = Limits(**(FAST.model_dump() | {"cpu_seconds": 8, "wall_seconds": WALL}))


def _spends(seconds: float, how: str) -> str:
    work = {
        "computing": "    while time.process_time() < t0 + {s}:\n        pass\n",
        "sleeping": "    time.sleep({s})\n",
    }[how].format(s=seconds)
    return f"import time\n\ndef f(a, n):\n    t0 = time.process_time()\n{work}    return a * n\n"


def _outcome(result: RunResult) -> tuple[str, float]:
    return result.status, result.wall_seconds


def test_a_run_computing_a_little_past_its_wall_clock_passes(sandbox: Sandbox) -> None:
    # 1.15 s of CPU with a wall clock of 1 s: the machine, not the run, decides how long that
    # takes; before the grace this was a time limit on a run well inside its CPU limit.
    result = run(sandbox, _spends(1.15, "computing"), limits=LIMITS)
    assert result.status == "ok", (result.status, result.message)
    assert result.wall_seconds > WALL


def test_a_run_sleeping_past_its_wall_clock_is_ended_by_it(sandbox: Sandbox) -> None:
    result = run(sandbox, _spends(5, "sleeping"), limits=LIMITS)
    assert result.status == "time_limit_exceeded"
    assert "wall-clock" in result.message
    assert result.wall_seconds < WALL * 1.5, _outcome(result)


@pytest.mark.parametrize("sandbox", ["bwrap-fork"], indirect=True)
def test_the_grace_of_a_computing_run_is_bounded(sandbox: Sandbox) -> None:
    result = run(sandbox, _spends(6, "computing"), limits=LIMITS)
    assert result.status == "time_limit_exceeded"
    assert "wall-clock" in result.message
    assert WALL * WALL_GRACE <= result.wall_seconds < WALL * WALL_GRACE + 1.0, _outcome(result)
