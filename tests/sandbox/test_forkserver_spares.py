"""When the fork server primes spares: one per run in flight while runs go on, all of them
between runs. Runs side by side must each find a spare for the next submission of their
grading thread; a run alone must not have priming beside it beyond the one spare its successor
takes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from tests.sandbox.helpers import FAST, run

SLOW = """
import time

def f(a, n):
    time.sleep(1.5)
    return a * n
"""


@pytest.fixture
def three_spares(bwrap_sandbox: BwrapSandbox) -> Iterator[ForkServerSandbox]:
    server = ForkServerSandbox(bwrap_sandbox, spares=3)
    assert server.wait_ready()
    yield server
    server.close()


def _until(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def _in_flight(server: ForkServerSandbox, count: int) -> list[threading.Thread]:
    """Start ``count`` slow runs side by side; returns once all of them are in flight."""
    assert _until(lambda: server.spares_ready() == server.spares, 10), "spares never primed"
    threads = [
        threading.Thread(target=run, args=(server, SLOW), kwargs={"limits": FAST})
        for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    assert _until(lambda: server._in_flight == count, 5), "the runs did not start"
    return threads


def test_runs_side_by_side_each_have_a_spare_primed_for_their_successor(
    three_spares: ForkServerSandbox,
) -> None:
    threads = _in_flight(three_spares, 2)
    try:
        # Both took a spare (3 -> 1); while both still run, the pool is back to one per run.
        assert _until(lambda: three_spares.spares_ready() == 2, 1.0), (
            f"{three_spares.spares_ready()} spares ready with 2 runs in flight"
        )
        assert three_spares._in_flight == 2, "the runs ended before the check: too fast a host?"
        time.sleep(0.3)
        assert three_spares.spares_ready() == 2, "primed beyond one spare per run in flight"
    finally:
        for thread in threads:
            thread.join()
    # Between runs the pool is topped up to its full count.
    assert _until(lambda: three_spares.spares_ready() == 3, 10)


def test_a_run_alone_leaves_its_successors_spare_ready_and_nothing_more(
    three_spares: ForkServerSandbox,
) -> None:
    threads = _in_flight(three_spares, 1)
    try:
        # It took one of three: two are left, more than the one its successor needs; none is
        # primed beside it.
        time.sleep(0.5)
        assert three_spares._in_flight == 1
        assert three_spares.spares_ready() == 2
    finally:
        for thread in threads:
            thread.join()
