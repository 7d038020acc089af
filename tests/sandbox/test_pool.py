"""The warm pool: every submission gets a sandbox of its own, launched ahead of demand and
destroyed after its one job; nothing of one submission is visible to the next."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox, StartedSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.backends.runtime import TORCH_RUNTIME_MB, find_torch
from sandbox.protocol import Limits, RunRequest
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
        victims = list(pool._numpy.ready)
    for started in victims:
        started.discard()
    result = run(pool, IDENTITY, cases=[{"a": np.ones(3), "n": 2}])
    assert result.status == "ok", result.message
    assert result.cases[0].output is not None


def test_close_destroys_idle_sandboxes(bwrap_sandbox: BwrapSandbox) -> None:
    pool = WarmPoolSandbox(bwrap_sandbox, size=2, limits=FAST)
    assert pool.prewarm(FAST)
    with pool._cond:
        idle = list(pool._numpy.ready)
    pool.close()
    for started in idle:
        assert not started.alive()
        for path in started.cgroup.dirs.values() if started.cgroup else ():
            assert not path.exists()
    pool.inner.last_run_id = idle[0].run_id
    assert run_processes(pool.inner) == []


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_a_first_torch_job_runs_cold_and_leaves_the_pool_warm(pool: WarmPoolSandbox) -> None:
    """A PyTorch job's limits (runtime_mb) differ from its problem's NumPy jobs': keyed like any
    other request it threw the pooled sandboxes away, and the next NumPy grading ran cold. Now
    it keys the PyTorch sandboxes only, once it is over: none imports torch beside it."""
    assert pool.prewarm(FAST)
    with pool._cond:
        idle = list(pool._numpy.ready)
    # Runs long enough to be watched (its own import of torch included).
    request = torch_request(
        TORCH_ONES.replace("    return", "    __import__('time').sleep(1)\n    return")
    )
    cold, torch_runs = pool.cold_runs, pool.torch_runs
    seen: list[tuple[Limits | None, int]] = []

    def look() -> None:
        with pool._cond:
            seen.append((pool._torch.limits, len(pool._torch.ready)))

    with ThreadPoolExecutor(1) as ex:
        running = ex.submit(pool.run, request)
        while not running.done():
            look()
            time.sleep(0.05)
        result = running.result()
    assert seen and set(seen) == {(None, 0)}, "torch sandboxes were keyed during the cold run"
    assert result.status == "ok", result.message
    assert list(result.cases[0].output) == [2.0, 2.0, 2.0]  # type: ignore[arg-type]
    assert (pool.cold_runs, pool.torch_runs) == (cold + 1, torch_runs + 1)
    with pool._cond:
        assert pool._numpy.limits == FAST
        assert pool._torch.limits == (request.limits if pool.preload_torch else None)
        # The sandboxes waiting before the torch job still wait (the filler may add more).
        assert idle and all(started in pool._numpy.ready and started.alive() for started in idle)
    served = pool.warm_runs
    assert run(pool, IDENTITY).status == "ok"
    assert pool.warm_runs == served + 1


TORCH_ONES = "import torch\ndef f(a, n):\n    return torch.ones(3, dtype=torch.float64) * n\n"

# TRACES for a PyTorch job: torch's own module attribute too.
TORCH_TRACES = (
    TRACES.replace("import os, sys, subprocess, numpy as np", "import os, torch")
    .replace('getattr(np, "_trace", None)', 'getattr(torch, "_trace", None)')
    .replace("np._trace = True", "torch._trace = True")
)


def torch_request(code: str) -> RunRequest:
    limits = FAST.model_copy(
        update={"runtime_mb": TORCH_RUNTIME_MB, "cpu_seconds": 5, "wall_seconds": 20}
    )
    return make_request(code, limits=limits).model_copy(update={"framework": "torch"})


def maps_torch(started: StartedSandbox) -> bool:
    """Whether a process of this idle sandbox has torch's library mapped (read from the host)."""
    marker = f"TENSORJUDGE_RUN={started.run_id}".encode()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            proc = Path("/proc", entry.name)
            with contextlib.suppress(OSError):
                ours = marker in (proc / "environ").read_bytes().split(b"\0")
                if ours and "libtorch_cpu.so" in (proc / "maps").read_text():
                    return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_torch_jobs_are_served_warm_each_by_a_fresh_runner_that_imported_torch(
    pool: WarmPoolSandbox,
) -> None:
    """Once a PyTorch job has keyed them, PyTorch jobs take pooled sandboxes whose runner
    imported torch before any job came; each serves one job and is destroyed, so nothing of one
    torch submission (files, torch's module state, environment, processes) reaches the next."""
    assert pool.preload_torch
    request = torch_request(TORCH_TRACES)
    assert pool.prewarm(request.limits, torch=True)
    with pool._cond:
        idle = list(pool._torch.ready)
    deadline = time.monotonic() + 60
    while not all(maps_torch(s) for s in idle) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert idle and all(maps_torch(s) for s in idle), "an idle runner did not import torch"
    run_ids = set()
    for _ in range(2):
        assert pool.prewarm(request.limits, torch=True)
        served, numpy_idle = pool.warm_runs, pool.idle()
        result = pool.run(request)
        assert pool.warm_runs == served + 1
        assert result.status == "ok", (result.message, result.stderr[-2000:])
        assert result.stdout.startswith("found - "), result.stdout
        run_ids.add(pool.last_run_id)
        assert pool.idle() >= numpy_idle  # the NumPy sandboxes stay
        assert_grader_still_works(pool)
    assert len(run_ids) == 2


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_without_preload_every_torch_job_runs_cold(bwrap_sandbox: BwrapSandbox) -> None:
    pool = WarmPoolSandbox(bwrap_sandbox, size=1, limits=FAST, preload_torch=False)
    try:
        for _ in range(2):
            result = pool.run(torch_request(TORCH_ONES))
            assert result.status == "ok", result.message
        assert (pool.cold_runs, pool.torch_runs, pool.warm_runs) == (2, 2, 0)
        assert pool._torch.limits is None and pool.idle(torch=True) == 0
    finally:
        pool.close()
