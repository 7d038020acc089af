"""What only the bwrap backend does: its file view, host uids, cgroup, seccomp and failures."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.runtime import INSIDE_MOUNT, find_torch
from sandbox.protocol import Limits
from tests.sandbox.helpers import (
    FAST,
    SYSCALL_ATTACKS,
    assert_grader_still_works,
    fork_until_refused,
    forks_started,
    run,
    run_processes,
)

pytestmark = pytest.mark.timeout(60)

SYSTEM_PYTHON = Path("/usr/bin/python3.11")


def test_only_the_runtime_and_numpy_are_visible(bwrap_sandbox: BwrapSandbox) -> None:
    rt = bwrap_sandbox.runtime
    code = f"""
import json, os

def _try_write(path):
    target = path if path == "/dev/null" else os.path.join(path, "probe")
    try:
        with open(target, "w") as fh:
            fh.write("x")
        return True
    except OSError:
        return False

def f(a, n):
    def walk(path, depth):
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            return type(exc).__name__
        if depth == 0:
            return entries
        subdirs = [e for e in entries if os.path.isdir(os.path.join(path, e))]
        return {{e: walk(os.path.join(path, e), depth - 1) for e in subdirs}}
    print(json.dumps({{
        "root": sorted(os.listdir("/")),
        "sandbox": walk("/sandbox", 1),
        "opt": walk("/opt", 1),
        "prefix": sorted(os.listdir({str(rt.prefix)!r})),
        "site": sorted(os.listdir({str(rt.stdlib / "site-packages")!r})),
        "venv": os.path.exists({str(Path(os.__file__).parents[3])!r}),
        "work": os.path.exists("/work"),
        "writable": [p for p in ("/", "/dev", "/dev/shm", "/sandbox", "/tmp", {str(rt.prefix)!r},
                                 {INSIDE_MOUNT!r})
                     if os.access(p, os.W_OK) and _try_write(p)],
        "devnull": _try_write("/dev/null"),
    }}))
    return a
"""
    result = run(bwrap_sandbox, code)
    assert result.status == "ok", result.message
    view = json.loads(result.stdout)
    allowed = {"dev", "proc", "tmp", "sandbox", "opt", "usr", "lib", "lib64", "root"}
    assert set(view["root"]) <= allowed
    # torch and the two modules ``import torch`` needs only where the torch extra is installed.
    extra = ["torch", "torchgen", "typing_extensions.py"] if find_torch() is not None else []
    assert view["sandbox"] == {"site-packages": ["numpy", "numpy.libs", *extra]}
    assert view["opt"] == {"tensorjudge": ["inside"]}  # the runner's package
    assert set(view["prefix"]) <= {"bin", "lib"}
    assert view["site"] == []  # the interpreter's own site-packages is hidden
    assert view["work"] is False
    assert view["writable"] == ["/tmp"]  # the one size-capped tmpfs
    assert view["devnull"] is True


def test_sandbox_processes_are_in_the_run_cgroup(bwrap_sandbox: BwrapSandbox) -> None:
    seen: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not seen:
            pids = run_processes(bwrap_sandbox)
            if len(pids) >= 2:  # the supervisor and the worker
                for pid in pids:
                    seen.append(Path(f"/proc/{pid}/cgroup").read_text())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = run(bwrap_sandbox, "import time\ndef f(a, n):\n    time.sleep(1.5)\n    return a\n")
    watcher.join()
    assert result.status == "ok"
    if not bwrap_sandbox.last_cgroup_dirs:
        pytest.skip("this host lets the grader create no cgroup")
    assert seen, "never saw the run's processes from the host"
    for cgroups in seen:
        lines = [line for line in cgroups.splitlines() if ":pids:" in line or ":memory:" in line]
        if not lines:  # cgroup v2
            lines = cgroups.splitlines()
        assert all(f"tensorjudge-{bwrap_sandbox.last_run_id}" in line for line in lines), cgroups
    assert_grader_still_works(bwrap_sandbox)


def test_memory_spread_over_processes_is_bounded_by_the_cgroup(
    bwrap_sandbox: BwrapSandbox,
) -> None:
    # Each process stays under RLIMIT_AS; together they pass the run's memory.
    code = """
import os, time
import numpy as np

def f(a, n):
    for _ in range(4):
        if os.fork() == 0:
            block = np.ones(150 * 1024 * 1024 // 8)
            time.sleep(20)
            os._exit(0)
    block = np.ones(150 * 1024 * 1024 // 8)
    time.sleep(20)
    return a
"""
    # The processes sleep far longer than a run takes to start, so that ending early is the OOM
    # notification's doing whatever the machine's load (the wall clock is later still).
    # CPU too: in CI the processes once spent the run's 2 CPU s before the notification came.
    limits = FAST.model_copy(update={"memory_mb": 256, "cpu_seconds": 10.0, "wall_seconds": 30.0})
    result = run(bwrap_sandbox, code, limits=limits)
    if not bwrap_sandbox.last_cgroup_dirs:
        pytest.skip("this host lets the grader create no cgroup")
    assert result.status == "memory_limit_exceeded", result.message
    if any((d.parent / "cgroup.event_control").exists() for d in bwrap_sandbox.last_cgroup_dirs):
        # cgroup v1: ended by the OOM notification, long before its processes' sleep was over.
        assert result.wall_seconds < 10.0, result.wall_seconds
    assert_grader_still_works(bwrap_sandbox)


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="needs Debian's python3.11")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give runs their own host uid")
def test_own_host_uid_contains_a_fork_bomb_without_any_cgroup() -> None:
    # A world-readable interpreter lets each run take its own unprivileged host uid, so
    # RLIMIT_NPROC alone bounds the bomb (host uid 0 is exempt from it).
    sandbox = BwrapSandbox(python=SYSTEM_PYTHON, use_cgroup=False)
    assert sandbox.switch_uid
    uids: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not uids:
            for pid in run_processes(sandbox):
                with contextlib.suppress(OSError):
                    uids.append(os.stat(f"/proc/{pid}").st_uid)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    limits = FAST.model_copy(update={"max_processes": 12})
    result = run(sandbox, fork_until_refused(linger=0.5), limits=limits)
    watcher.join()
    assert result.status == "ok", result.message
    assert 0 < forks_started(result) <= 12
    assert uids and all(200_000 <= uid < 200_000 + 65536 for uid in uids), uids
    assert_grader_still_works(sandbox)


class _NoSeccomp(BwrapSandbox):
    def command(
        self, limits: Limits, seccomp_fd: int, run_id: str = "", **kwargs: bool
    ) -> list[str]:
        argv = super().command(limits, seccomp_fd, run_id, **kwargs)
        at = argv.index("--seccomp")
        return argv[:at] + argv[at + 2 :]


def test_the_seccomp_probe_sees_calls_the_namespaces_alone_allow() -> None:
    """Without the filter some probed calls succeed: the denial test can fail."""
    # PTRACE_ATTACH on bwrap's init succeeds without the filter and stalls the run: left out.
    code = SYSCALL_ATTACKS.replace('"ptrace(PTRACE_ATTACH, 1)": attempt(101, 16, 1, 0, 0),', "")
    result = run(_NoSeccomp(), code)
    assert result.status == "ok", result.message
    outcome = json.loads(result.stdout)
    succeeded = {k for k, v in outcome.items() if v == 0 and not k.startswith("allowed")}
    assert {"keyctl", "io_uring_setup", "personality", "process_vm_readv"} <= succeeded


def test_missing_bwrap_is_an_internal_error() -> None:
    result = run(BwrapSandbox(bwrap="/nonexistent/bwrap"), "def f(a, n):\n    return a\n")
    assert result.status == "internal_error"
    assert "bubblewrap" in result.message


def test_a_memory_limit_too_small_for_python_is_an_internal_error() -> None:
    limits = Limits(cpu_seconds=2, wall_seconds=4, memory_mb=32, output_bytes=4096)
    result = run(BwrapSandbox(), "def f(a, n):\n    return a\n", limits=limits)
    assert result.status == "internal_error"
    assert "did not start" in result.message
