"""The wall clock ends a run that waits. A run that computes while more runs than cores share the
machine is held back by them, not waiting: it gets up to twice its wall clock, its CPU limit
ending it if it is heavy, so a verdict does not depend on how many others ran beside it. Alone,
the wall clock is strict (the submission cannot make itself look held back)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from sandbox.backends.common import WALL_GRACE, WATCHED
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.protocol import RunResult, Sandbox
from tests.sandbox.helpers import FAST, run

WALL = 1.0
LIMITS = FAST.model_copy(update={"cpu_seconds": 8, "wall_seconds": WALL})


def _spends(seconds: float, how: str) -> str:
    work = {
        "computing": "    while time.process_time() < t0 + {s}:\n        pass\n",
        "sleeping": "    time.sleep({s})\n",
    }[how].format(s=seconds)
    return f"import time\n\ndef f(a, n):\n    t0 = time.process_time()\n{work}    return a * n\n"


def _outcome(result: RunResult) -> tuple[str, str, float]:
    return result.status, result.message, result.wall_seconds


@pytest.fixture
def beside(fork_server: ForkServerSandbox) -> Iterator[None]:
    """As many sleeping runs as the machine has cores, in flight while the test's run goes on:
    with it, more runs than cores share the machine."""
    sleepers = [
        threading.Thread(target=run, args=(fork_server, _spends(WALL * WALL_GRACE + 1, "sleeping")))
        for _ in range(WATCHED.cores)
    ]
    for thread in sleepers:
        thread.start()
    deadline = time.monotonic() + 30
    while WATCHED.count() < WATCHED.cores:
        assert time.monotonic() < deadline, "the runs beside never started"
        time.sleep(0.01)
    yield
    for thread in sleepers:
        thread.join()


def test_alone_a_run_computing_past_its_wall_clock_is_ended_by_it(sandbox: Sandbox) -> None:
    result = run(sandbox, _spends(1.5, "computing"), limits=LIMITS)
    assert result.status == "time_limit_exceeded", _outcome(result)
    assert "wall-clock" in result.message
    assert result.wall_seconds < WALL * 1.5, _outcome(result)


def test_a_run_computing_a_little_past_its_wall_clock_beside_others_passes(
    sandbox: Sandbox, beside: None
) -> None:
    # 1.15 s of CPU with a wall clock of 1 s while the machine is shared: how long that takes is
    # the others' doing; without the grace this was a time limit on a run inside its CPU limit.
    result = run(sandbox, _spends(1.15, "computing"), limits=LIMITS)
    assert result.status == "ok", _outcome(result)
    assert result.wall_seconds > WALL


@pytest.mark.parametrize("sandbox", ["bwrap-fork"], indirect=True)
def test_a_run_sleeping_past_its_wall_clock_beside_others_is_ended_by_it(
    sandbox: Sandbox, beside: None
) -> None:
    result = run(sandbox, _spends(5, "sleeping"), limits=LIMITS)
    assert result.status == "time_limit_exceeded", _outcome(result)
    assert "wall-clock" in result.message
    assert result.wall_seconds < WALL * 1.5, _outcome(result)


@pytest.mark.parametrize("sandbox", ["bwrap-fork"], indirect=True)
def test_the_grace_of_a_computing_run_is_bounded(sandbox: Sandbox, beside: None) -> None:
    result = run(sandbox, _spends(6, "computing"), limits=LIMITS)
    assert result.status == "time_limit_exceeded", _outcome(result)
    assert "wall-clock" in result.message
    assert WALL * WALL_GRACE <= result.wall_seconds < WALL * WALL_GRACE + 1.0, _outcome(result)
