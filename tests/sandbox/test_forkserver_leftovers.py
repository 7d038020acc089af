"""A fork-server run is cloned by the zygote straight into its own namespaces and given its own
host uid by a map the zygote writes: attacks on that, as a hostile student would make them. A
run leaves a process behind that tries to outlive it and reach the next run; a run checks whose
uid it really has and who owns its user namespace."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from pathlib import Path

import pytest

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
        try:
            os.setsid()
        except OSError:  # refused by the worker's filter: stays in the session
            pass
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
def server(own_fork_server: ForkServerSandbox) -> ForkServerSandbox:
    return own_fork_server


def _uids(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(u) for u in line.split()[1:]]
    return []


def _processes_of_uid(server: ForkServerSandbox, uid: int) -> dict[int, list[int]]:
    """Every process below this fork server's zygote with ``uid`` among its ids: pid -> uids
    (other graders on this host hand out uids of the same range)."""
    zygote = server.zygote_pid()
    assert zygote is not None
    found = {}
    for pid in descendants(zygote):
        try:
            ids = _uids(pid)
        except OSError:
            continue
        if uid in ids:
            found[pid] = ids
    return found


def _uid_of_the_next_run(server: ForkServerSandbox) -> tuple[threading.Thread, list[int]]:
    """A watcher that reads the host uid of the run about to start, while it runs."""
    before = server.last_host_pid
    seen: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            pid = server.last_host_pid
            if pid != before:
                with contextlib.suppress(OSError, IndexError):
                    seen.append(_uids(pid)[0])
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    return watcher, seen


def test_a_process_left_behind_is_gone_before_the_run_s_result_is_returned(
    server: ForkServerSandbox,
) -> None:
    """What a run leaves running must be dead when its result comes back (no grace period):
    otherwise it could reach the next run, and its uid and cgroup could be handed out again."""
    before = server.forked_runs
    watcher, run_uid = _uid_of_the_next_run(server)
    result = run(server, LINGERER, limits=FAST)
    # Checked at once: anything of the run still alive now is a survivor.
    survivors = server.leftovers()
    same_uid = _processes_of_uid(server, run_uid[0]) if run_uid else {}
    watcher.join()
    assert server.forked_runs == before + 1, "not served by the fork server"
    assert result.status == "ok", result.message
    assert survivors == [], f"processes of the finished run are still alive: {survivors}"
    for path in server.last_cgroup_dirs:
        assert not path.exists(), f"the finished run's cgroup {path} is still there"
    if server.inner.host_uids is not None:
        assert run_uid, "never saw the run's host uid"
        assert same_uid == {}, f"processes with the run's uid outlived it: {same_uid}"
    result = run(server, NEXT, limits=FAST)
    assert result.status == "ok", result.message
    seen = json.loads(result.stdout)
    # pid 2 of a fresh pid namespace (pid 1, the supervisor, is hidden from it: hidepid).
    assert seen == {"tmp": [], "shm": [], "procs": [2]}, seen
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


# mount and umount2 with a target the kernel cannot read: EFAULT if the call reaches the kernel
# (it reads the path before it checks capabilities), EPERM only from the seccomp filter.
MOUNT_PROBE = """
import ctypes, json

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def attempt(nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if ret >= 0 else ctypes.get_errno()

def f(a, n):
    print(json.dumps({"mount": attempt(165, 0, 8, 0, 0, 0), "umount2": attempt(166, 8, 0)}))
    return a
"""


def test_a_run_meets_the_whole_seccomp_filter_mount_rule_included(
    server: ForkServerSandbox,
) -> None:
    """A primed run installs the filter in two parts, the mount rule only once its /tmp is
    mounted after the go-ahead: the job must meet both. EFAULT would mean the call got past the
    filter to the kernel (which would still refuse a real mount for want of capabilities)."""
    for _ in range(2):  # from a spare and, the spare taken, from a run forked on demand
        result = run(server, MOUNT_PROBE, limits=FAST)
        assert result.status == "ok", result.message
        assert json.loads(result.stdout) == {"mount": 1, "umount2": 1}, result.stdout  # EPERM
