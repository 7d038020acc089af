"""How a run ends: the supervisor ends the worker once it has reported every case and said
``done``, without waiting for its exit. Attacked from the submission (a ``done`` forged before
the last result, a worker that will not exit) and checked for what must not be lost (text the
last public call printed). Each attack fails the test if it works."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sandbox import wire
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import phased_request
from tests.sandbox.test_call_frames import TOOLS, raw_frames

pytestmark = pytest.mark.timeout(120)

EARLY_DONE = (
    TOOLS
    + """
def f(a, n):
    if n == 2:  # the last case: "done" before its result, which would end the run without it
        _frame(b"J", b'{"type":"done"}')
    return a * n
"""
)


def test_a_done_forged_before_the_last_result_does_not_end_the_run(sandbox: Sandbox) -> None:
    request = phased_request(
        EARLY_DONE, [("public-1", np.ones(3), False), ("hidden-1", np.arange(3.0), True)]
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    assert [c.name for c in result.cases] == ["public-1", "hidden-1"]
    np.testing.assert_array_equal(result.cases[1].output, np.arange(3.0) * 2)


DONE_THEN_DIE = (
    TOOLS
    + """
import time


def f(a, n):
    if n == 2:  # "done" with the last case unreported, then an exit of its own choosing
        _frame(b"J", b'{"type":"done"}')
        time.sleep(0.3)
        os._exit(3)
    return a * n
"""
)


def test_a_forged_done_is_not_a_completed_run() -> None:
    """The supervisor still waits for a worker whose ``done`` came before its last result,
    and reports how it exited."""
    request = phased_request(
        DONE_THEN_DIE, [("public-1", np.ones(3), False), ("public-2", np.ones(3), False)]
    )
    _, frames = raw_frames(request)
    end = frames[-1]
    assert end["type"] == "end"
    assert end["completed"] is False
    assert end["worker_exit"] == 3


LAST_WORDS = """
def f(a, n):
    print("last words", n)  # kept in the text stream's buffer until the worker flushes it
    return a * n
"""


def test_what_the_last_public_call_printed_is_kept(sandbox: Sandbox) -> None:
    """The worker is ended at ``done``: what the last call printed (still buffered when it
    returned) reaches the supervisor before that."""
    request = phased_request(
        LAST_WORDS, [("public-1", np.ones(2), False), ("public-2", np.ones(2), False)]
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    assert [c.stdout for c in result.cases] == ["last words 1\n", "last words 2\n"]


NO_EXIT = (
    TOOLS
    + """
import time

print("WORKER", os.getpid(), flush=True)
_worker.exit = lambda code: time.sleep(30)  # "done" said, then stay alive with the inputs


def f(a, n):
    return a * n
"""
)


def test_a_worker_that_will_not_exit_is_ended_with_its_run() -> None:
    request = phased_request(
        NO_EXIT, [("public-1", np.ones(2), False), ("hidden-1", np.ones(2), True)]
    )
    start = time.monotonic()
    data, frames = raw_frames(request)
    assert time.monotonic() - start < 20
    end = frames[-1]
    assert end["completed"] is True
    assert end["worker_exit"] is None and end["worker_signal"] is None
    parsed = wire.parse_stream(data, request)
    assert [c.name for c in parsed.cases] == ["public-1", "hidden-1"]
    pid = int(end["stdout"].split()[1])
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the worker outlived its run"


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_end_frame_of_a_completed_run_names_no_exit() -> None:
    """The control: a plain completed run; its worker is ended, not waited for."""
    request = phased_request("def f(a, n):\n    return a * n\n", [("p", np.ones(2), False)])
    _, frames = raw_frames(request)
    end = frames[-1]
    assert end["completed"] is True and end["worker_exit"] is None
