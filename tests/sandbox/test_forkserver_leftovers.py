"""A fork-server run is cloned by the zygote straight into its own namespaces and given its own
host uid by a map the zygote writes: attacks on that, as a hostile student would make them. A
run leaves a process behind that tries to outlive it and reach the next run; a run checks whose
uid it really has and who owns its user namespace."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from tests.sandbox.helpers import FAST, assert_grader_still_works, run
from tests.sandbox.test_host_uid import descendants

pytestmark = pytest.mark.timeout(120)

NS_GET_OWNER_UID = 0xB704  # ioctl on a user namespace fd: its owner's uid, as the caller sees it

# Leaves a daemon behind (its own session, SIGTERM and SIGHUP ignored) that, once its run is
# over, for 5 s keeps signalling everything it can, ptracing pid 1..63, and writing where the
# next run would look.
LINGERER = """
import ctypes, os, signal, time

def f(a, n):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            libc = ctypes.CDLL(None, use_errno=True)
            time.sleep(0.5)  # its own run has returned by now: the next one is the target
            end = time.monotonic() + 5
            while time.monotonic() < end:
                for sig in (signal.SIGKILL, signal.SIGSTOP):
                    try:
                        os.kill(-1, sig)
                    except OSError:
                        pass
                for pid in range(1, 64):
                    libc.ptrace(16, pid, 0, 0)
                for path in ("/tmp/from-the-last-run", "/dev/shm/from-the-last-run"):
                    try:
                        open(path, "w").write("x")
                    except OSError:
                        pass
                time.sleep(0.001)
            os._exit(0)
        os._exit(0)
    time.sleep(0.2)  # the daemon is up and at it before this run ends
    return a
"""

# The next run: looks for anything of the last one and checks it was not stopped or killed.
NEXT = """
import json, os, time

def f(a, n):
    time.sleep(0.5)  # a live leftover would have had every chance by now
    print(json.dumps({
        "tmp": sorted(os.listdir("/tmp")),
        "shm": sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else [],
        "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    }))
    return a * n
"""


@pytest.fixture
def server(bwrap_sandbox: BwrapSandbox) -> Iterator[ForkServerSandbox]:
    server = ForkServerSandbox(bwrap_sandbox)
    assert server.wait_ready()
    yield server
    server.close()


def _uids(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(u) for u in line.split()[1:]]
    return []


def _run_uid_processes(server: ForkServerSandbox) -> dict[int, list[int]]:
    """Every process below this fork server's zygote running as a run uid: pid -> uids (other
    graders on this host hand out uids of the same range)."""
    uids, zygote = server.inner.host_uids, server.zygote_pid()
    assert uids is not None and zygote is not None
    found = {}
    for pid in descendants(zygote):
        try:
            ids = _uids(pid)
        except OSError:
            continue
        if any(uids.base < u <= uids.base + 65535 for u in ids):
            found[pid] = ids
    return found


def test_a_process_left_behind_is_gone_before_the_run_s_result_is_returned(
    server: ForkServerSandbox,
) -> None:
    """What a run leaves running must be dead when its result comes back (no grace period):
    otherwise it could reach the next run, and its uid and cgroup could be handed out again."""
    before = server.forked_runs
    result = run(server, LINGERER, limits=FAST)
    # Checked at once: anything of the run still alive now is a survivor.
    survivors = server.leftovers()
    assert server.forked_runs == before + 1, "not served by the fork server"
    assert result.status == "ok", result.message
    assert survivors == [], f"processes of the finished run are still alive: {survivors}"
    for path in server.last_cgroup_dirs:
        assert not path.exists(), f"the finished run's cgroup {path} is still there"
    if server.inner.host_uids is not None:
        # Only the spares (one waiting supervisor each, a fresh uid each) run as a run uid now.
        spares = {p.pid for p in list(server._spare_pool)}
        others = {pid: ids for pid, ids in _run_uid_processes(server).items() if pid not in spares}
        assert others == {}, f"processes with a run's uid outlived their run: {others}"
    result = run(server, NEXT, limits=FAST)
    assert result.status == "ok", result.message
    seen = json.loads(result.stdout)
    assert seen == {"tmp": [], "shm": [], "procs": [1, 2]}, seen
    assert_grader_still_works(server)


def test_a_run_s_processes_have_its_own_uid_and_do_not_own_their_user_namespace(
    server: ForkServerSandbox,
) -> None:
    """The zygote clones each run into a new user namespace (so the namespace is the zygote's,
    not the run's) and maps 65534 in it to the run's own host uid: every id of the run's
    supervisor is that uid, before any job, and differs from every other run's and the zygote's.
    A run that kept the zygote's uid, or owned its namespace, would fail here."""
    uids = server.inner.host_uids
    if uids is None:
        pytest.skip("the grader is not root: runs keep its uid, there is no per-run host uid")
    primed = [server._prime(FAST) for _ in range(3)]
    try:
        seen = []
        for p in primed:
            ids = _uids(p.pid)
            assert p.host_uid is not None
            assert ids == [p.host_uid] * 4, (ids, p.host_uid)
            assert p.host_uid != uids.base
            fd = os.open(f"/proc/{p.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
            try:
                owner = bytearray(4)
                fcntl.ioctl(fd, NS_GET_OWNER_UID, owner)
            finally:
                os.close(fd)
            # Seen from the host: the zygote's uid, which no run's process ever has.
            assert int.from_bytes(owner, "little") == uids.base
            gids = [
                int(g)
                for line in Path(f"/proc/{p.pid}/status").read_text().splitlines()
                if line.startswith(("Gid:", "Groups:"))
                for g in line.split()[1:]
            ]
            assert gids == [p.host_uid] * 4, gids  # and no supplementary group
            assert Path(f"/proc/{p.pid}/setgroups").read_text().strip() == "deny"
            seen.append(p.host_uid)
        assert len(set(seen)) == len(seen)
    finally:
        for p in primed:
            p.discard()
    # And a job still runs in such a run.
    deadline = time.monotonic() + 5
    while server.spares_ready() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert_grader_still_works(server)
