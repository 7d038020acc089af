"""One CPU budget per run, across all of its processes and threads, held from outside; and one
run's load cannot push a concurrent correct run past its limits. Real sandboxes, real runs."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.common import CPU_OVERHEAD_SECONDS
from sandbox.protocol import Limits, RunResult, Sandbox
from tests.sandbox.helpers import FAST, assert_grader_still_works, run, run_watched, unwrapped

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

# 60 children and the parent spin: with a per-process CPU limit each could use all of it.
SPINNERS = """
import os

def f(a, n):
    for _ in range(60):
        if os.fork() == 0:
            break
    while True:
        pass
"""

# What only the whole-run budget says; a per-process CPU limit (RLIMIT_CPU) also says "CPU limit".
WHOLE_RUN = "CPU limit of 2 s exceeded (all processes of the run together)"

ATTACK = FAST.model_copy(update={"cpu_seconds": 2.0, "wall_seconds": 10.0, "max_processes": 80})


def cgroup_cpu_seconds(sandbox: Sandbox) -> float | None:
    """The CPU time of the sandbox's latest run, read from its cgroup (bwrap backends)."""
    for d in getattr(sandbox, "last_cgroup_dirs", []):
        try:
            if (Path(d) / "cpuacct.usage").exists():  # cgroup v1
                return int((Path(d) / "cpuacct.usage").read_text()) / 1e9
            for line in (Path(d) / "cpu.stat").read_text().splitlines():  # v2
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            continue
    return None


def test_sixty_spinning_children_share_one_cpu_budget(sandbox: Sandbox) -> None:
    seen: list[float] = []

    def sample() -> None:  # the run's total CPU as its cgroup counts it, while it runs
        used = cgroup_cpu_seconds(sandbox)
        if used is not None:
            seen.append(used)

    result = run_watched(sandbox, SPINNERS, sample, every=0.02, limits=ATTACK)
    assert result.status == "time_limit_exceeded", result.message
    assert result.message == WHOLE_RUN, result.message
    budget = ATTACK.cpu_seconds + CPU_OVERHEAD_SECONDS
    # Ended by its CPU time, before the wall clock; and in all, the budget, not 61 processes'
    # worth of it.
    assert result.wall_seconds < ATTACK.wall_seconds, result.wall_seconds
    if getattr(sandbox, "last_cgroup_dirs", None):
        assert seen, "the run's cgroup was never read"
        assert budget - 0.3 < max(seen) < budget + 0.3, max(seen)
    assert_grader_still_works(sandbox)


# A correct submission that needs about a second of CPU, as a student's heavy but fine solution.
HEAVY_BUT_CORRECT = """
import time

def f(a, n):
    start = time.process_time()
    x = 0
    while time.process_time() - start < 1.0:
        x += 1
    return a * n
"""

VICTIM = FAST.model_copy(update={"cpu_seconds": 4.0, "wall_seconds": 8.0})


def test_a_spinning_run_cannot_push_a_concurrent_correct_run_past_its_limits(
    sandbox: Sandbox,
) -> None:
    backend = unwrapped(sandbox)
    results: dict[str, RunResult] = {}

    def go(key: str, code: str, limits: Limits) -> None:
        results[key] = run(backend, code, limits=limits)

    attacker = threading.Thread(target=go, args=("attacker", SPINNERS, ATTACK))
    attacker.start()
    time.sleep(0.5)  # the attacker's 61 processes are spinning
    a = np.arange(6.0).reshape(2, 3)
    victim = threading.Thread(target=go, args=("victim", HEAVY_BUT_CORRECT, VICTIM))
    victim.start()
    victim.join()
    attacker.join()
    assert results["attacker"].status == "time_limit_exceeded", results["attacker"].message
    good = results["victim"]
    assert good.status == "ok", good.message
    assert good.cases[0].output is not None
    np.testing.assert_array_equal(good.cases[0].output, a * 2)
    assert_grader_still_works(sandbox)


def test_without_a_cgroup_the_budget_counts_the_run_s_process_tree() -> None:
    sandbox = BwrapSandbox(use_cgroup=False)
    result = run(sandbox, SPINNERS, limits=ATTACK)
    assert result.status == "time_limit_exceeded", result.message
    assert result.message == WHOLE_RUN, result.message
    assert result.wall_seconds < ATTACK.wall_seconds, result.wall_seconds
    assert_grader_still_works(sandbox)
