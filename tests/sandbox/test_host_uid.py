"""Runs never execute as host root: every process of a run, as the host sees it, has an
unprivileged uid, on every backend; the fork server's zygote too."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import FAST, assert_grader_still_works, run_processes, run_watched

pytestmark = pytest.mark.timeout(120)

# A run with a child, both alive long enough for the host to look at them.
LINGERS = """
import os, time

def f(a, n):
    if os.fork() == 0:
        time.sleep(1.5)
        os._exit(0)
    time.sleep(1.5)
    return a
"""


def host_uids(pid: int) -> list[int]:
    """Real, effective, saved and filesystem uid of ``pid`` in the host's namespace."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(u) for u in line.split()[1:]]
    return []


def live_run_pids(sandbox: Sandbox) -> set[int]:
    """Host pids of the latest run's processes: its cgroup, its marker, its pid namespace."""
    pids = set(run_processes(sandbox))
    for d in getattr(sandbox, "last_cgroup_dirs", []):
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(p) for p in (Path(d) / "cgroup.procs").read_text().split()}
    leftovers = getattr(sandbox, "leftovers", None)
    if callable(leftovers):
        pids |= {p for p in leftovers() if isinstance(p, int)}
    # Docker: the engine names the run's container; its init and every descendant belong to it.
    client, run_id = getattr(sandbox, "client", None), getattr(sandbox, "last_run_id", "")
    if client is not None and run_id:
        with contextlib.suppress(Exception):
            for container in client.containers.list(filters={"name": f"tj-sandbox-{run_id}"}):
                pids |= descendants(int(container.attrs["State"]["Pid"] or 0))
    return pids


def descendants(root: int) -> set[int]:
    """``root`` and every process below it, from /proc/PID/task/TID/children."""
    found: set[int] = set()
    todo = [root] if root > 0 else []
    while todo:
        pid = todo.pop()
        found.add(pid)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_every_process_of_a_run_has_an_unprivileged_host_uid(sandbox: Sandbox) -> None:
    seen: dict[int, list[int]] = {}

    def look() -> None:
        for pid in live_run_pids(sandbox):
            with contextlib.suppress(OSError):
                seen.setdefault(pid, host_uids(pid))

    limits = FAST.model_copy(update={"wall_seconds": 8.0})
    result = run_watched(sandbox, LINGERS, look, limits=limits)
    assert result.status == "ok", result.message
    # The supervisor, the worker and its child at least (and the launcher where there is one).
    assert len(seen) >= 3, seen
    assert all(uids and 0 not in uids for uids in seen.values()), seen
    if os.geteuid() == 0 or sandbox.name == "docker":
        # One uid of its own per run, from the unprivileged range.
        assert len({u for uids in seen.values() for u in uids}) == 1, seen
        assert all(200_000 < u < 200_000 + 65536 for uids in seen.values() for u in uids), seen
    assert_grader_still_works(sandbox)


def test_the_fork_server_s_zygote_is_not_host_root(fork_server: ForkServerSandbox) -> None:
    assert fork_server.wait_ready()
    launcher = fork_server.zygote_pid()
    assert launcher is not None
    tree = {launcher}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) in tree:
                    tree.add(int(entry.name))
    uids = {pid: host_uids(pid) for pid in tree}
    assert all(u and 0 not in u for u in uids.values()), uids


def test_a_run_s_uid_is_not_reused_while_its_cgroup_could_not_be_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A uid goes back to the range only once the run's processes are gone; a cgroup that
    outlives its removal deadline may still hold one, so its uid is never handed out again."""
    from sandbox.backends import cgroup, unprivileged

    run_cg = cgroup.RunCgroup.create(64 << 20, 8)
    if run_cg is None:
        pytest.skip("no cgroup for runs on this host")
    # A child cgroup makes the kernel refuse the rmdir (EBUSY), as a live process would.
    blocker = next(iter(run_cg.dirs.values())) / "blocker"
    blocker.mkdir()
    monkeypatch.setattr(cgroup, "REMOVE_SECONDS", 0.2)
    uids = unprivileged.HostUids(200_000)
    uid = uids.take()
    try:
        gone = run_cg.remove()
        unprivileged.give_back_uid(uids, uid, gone)
        assert gone is False
        assert uid in uids._used, "the uid of a run that may still be alive went back to use"
    finally:
        blocker.rmdir()
        assert run_cg.remove() is True
    unprivileged.give_back_uid(uids, uid, True)
    assert uid not in uids._used
