"""The warm pool: every submission gets a sandbox of its own, launched ahead of demand and
destroyed after its one job; nothing of one submission is visible to the next."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.backends.runtime import TORCH_RUNTIME_MB, find_torch
from tests.sandbox.helpers import (
    FAST,
    IDENTITY,
    assert_grader_still_works,
    make_request,
    run,
    run_processes,
)

pytestmark = pytest.mark.timeout(120)

# Leaves traces everywhere a later submission could look: /tmp, /dev/shm, a module attribute of
# numpy, an environment variable, a background process; then reports what it found of earlier
# submissions' traces.
TRACES = """
import os, sys, subprocess, numpy as np

def f(a, n):
    found = []
    if os.path.exists("/tmp/trace"):
        found.append("tmp")
    if os.path.exists("/dev/shm/trace"):
        found.append("shm")
    if getattr(np, "_trace", None):
        found.append("numpy")
    if os.environ.get("TRACE"):
        found.append("env")
    for path in ("/tmp/trace", "/dev/shm/trace"):
        try:
            open(path, "w").write("x")
        except OSError:
            pass
    np._trace = True
    os.environ["TRACE"] = "1"
    if os.fork() == 0:
        import time
        time.sleep(30)
        os._exit(0)
    print("found", ",".join(found) or "-", os.getpid())
    return a
"""


@pytest.fixture
def pool(bwrap_sandbox: BwrapSandbox) -> Iterator[WarmPoolSandbox]:
    pool = WarmPoolSandbox(bwrap_sandbox, size=2, limits=FAST)
    yield pool
    pool.close()


def test_no_state_survives_from_one_submission_to_the_next(pool: WarmPoolSandbox) -> None:
    run_ids = set()
    for _ in range(3):
        assert pool.prewarm(FAST)
        served = pool.warm_runs
        result = run(pool, TRACES)
        assert pool.warm_runs == served + 1
        assert result.status == "ok", result.message
        assert result.stdout.startswith("found - "), result.stdout
        run_ids.add(pool.last_run_id)
        assert_grader_still_works(pool)  # the forked sleeper died with its sandbox
    assert len(run_ids) == 3


def test_idle_sandboxes_wait_without_a_wall_clock_and_refill(pool: WarmPoolSandbox) -> None:
    limits = FAST.model_copy(update={"wall_seconds": 1.0})
    assert pool.prewarm(limits)
    time.sleep(1.5)  # longer than the run's wall clock: it starts with the job, not the launch
    result = run(pool, IDENTITY, limits=limits)
    assert result.status == "ok", result.message
    deadline = time.monotonic() + 20
    while pool.idle() < pool.size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.idle() == pool.size


def test_other_limits_run_cold_and_rekey_the_pool(pool: WarmPoolSandbox) -> None:
    assert pool.prewarm(FAST)
    other = FAST.model_copy(update={"memory_mb": 128})
    cold = pool.cold_runs
    result = run(pool, "import numpy as np\ndef f(a, n):\n    return np.ones(30 * 2**20)\n",
                 limits=other)  # fmt: skip
    assert result.status == "memory_limit_exceeded", result.message  # 240 MiB > 128 MiB
    assert pool.cold_runs == cold + 1
    assert pool.prewarm(other)
    result = run(pool, "import numpy as np\ndef f(a, n):\n    return np.ones(30 * 2**20)\n",
                 limits=other)  # fmt: skip
    assert result.status == "memory_limit_exceeded", result.message


def test_a_dead_idle_sandbox_is_never_used(pool: WarmPoolSandbox) -> None:
    assert pool.prewarm(FAST)
    with pool._cond:
        victims = list(pool._ready)
    for started in victims:
        started.discard()
    result = run(pool, IDENTITY, cases=[{"a": np.ones(3), "n": 2}])
    assert result.status == "ok", result.message
    assert result.cases[0].output is not None


def test_close_destroys_idle_sandboxes(bwrap_sandbox: BwrapSandbox) -> None:
    pool = WarmPoolSandbox(bwrap_sandbox, size=2, limits=FAST)
    assert pool.prewarm(FAST)
    with pool._cond:
        idle = list(pool._ready)
    pool.close()
    for started in idle:
        assert not started.alive()
        for path in started.cgroup.dirs.values() if started.cgroup else ():
            assert not path.exists()
    pool.inner.last_run_id = idle[0].run_id
    assert run_processes(pool.inner) == []


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_a_torch_job_runs_cold_and_leaves_the_pool_warm(pool: WarmPoolSandbox) -> None:
    """A PyTorch job's limits (runtime_mb) differ from its problem's NumPy jobs': keyed like any
    other request it threw the pooled sandboxes away, and the next NumPy grading ran cold."""
    assert pool.prewarm(FAST)
    with pool._cond:
        idle = list(pool._ready)
    torch_limits = FAST.model_copy(update={"runtime_mb": TORCH_RUNTIME_MB, "cpu_seconds": 5})
    request = make_request(
        "import torch\ndef f(a, n):\n    return torch.ones(3, dtype=torch.float64) * n\n",
        limits=torch_limits.model_copy(update={"wall_seconds": 20}),
    ).model_copy(update={"framework": "torch"})
    cold, torch_runs = pool.cold_runs, pool.torch_runs
    result = pool.run(request)
    assert result.status == "ok", result.message
    assert list(result.cases[0].output) == [2.0, 2.0, 2.0]  # type: ignore[arg-type]
    assert (pool.cold_runs, pool.torch_runs) == (cold + 1, torch_runs + 1)
    with pool._cond:
        assert pool._limits == FAST
        # The sandboxes waiting before the torch job still wait (the filler may add more).
        assert idle and all(started in pool._ready and started.alive() for started in idle)
    served = pool.warm_runs
    assert run(pool, IDENTITY).status == "ok"
    assert pool.warm_runs == served + 1
