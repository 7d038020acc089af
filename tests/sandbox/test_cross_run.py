"""Runs side by side cannot reach each other: no shared terminal, no lock, lease or watch on the
files they share, no socket family but AF_UNIX. Each test runs a real attack on every backend."""

from __future__ import annotations

import ctypes
import errno

import pytest

from sandbox.protocol import Sandbox
from tests.sandbox.helpers import (
    FAST,
    assert_grader_still_works,
    report,
    run,
    run_watched,
    side_by_side,
)

pytestmark = pytest.mark.timeout(120)

SIDE_BY_SIDE = FAST.model_copy(update={"wall_seconds": 8.0})


# Both runs say when (host wall clock: no backend has a clock namespace) their terminal was
# open and when they looked for terminals, so the test can tell the attempt met an open one.
TERMINAL_OWNER = """
import json, os, time

def f(a, n):
    got = b""
    try:
        master, slave = os.openpty()
        name = os.ttyname(slave)
        os.set_blocking(master, False)
    except OSError as exc:
        print(json.dumps({"pty": "refused " + str(exc.errno), "got": ""}))
        return a
    opened = time.time()
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        try:
            got += os.read(master, 4096)
        except BlockingIOError:
            time.sleep(0.02)
    closing = time.time()
    print(json.dumps({"pty": name, "got": got.decode("latin-1"), "open": [opened, closing]}))
    return a
"""

TERMINAL_INTRUDER = """
import json, os, time

def f(a, n):
    # Keeps looking for two seconds: the owner's start may come before or after this one's.
    seen, wrote, looks = set(), set(), []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        looks.append(time.time())
        try:
            # ptmx would make a new terminal of this run's own: only existing ones count
            names = sorted(name for name in os.listdir("/dev/pts") if name.isdigit())
        except OSError:
            names = []
        seen.update(names)
        for name in names:
            try:
                fd = os.open("/dev/pts/" + name, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
                os.write(fd, b"INTRUDER\\n")
                os.close(fd)
                wrote.add(name)
            except OSError:
                pass
        time.sleep(0.05)
    print(json.dumps({"seen": sorted(seen), "wrote": sorted(wrote), "looks": looks}))
    return a
"""


def test_a_run_cannot_write_into_another_run_s_terminal(sandbox: Sandbox) -> None:
    runs = side_by_side(
        sandbox, {"owner": TERMINAL_OWNER, "intruder": TERMINAL_INTRUDER}, SIDE_BY_SIDE, 0.8
    )
    owner, intruder = runs["owner"], runs["intruder"]
    mine, theirs = report(owner), report(intruder)
    if str(mine["pty"]).startswith("refused"):
        # A backend with no terminals at all (the fork server): none to find either.
        assert theirs["seen"] == [], (mine, theirs)
    else:
        # The precondition: the intruder looked (and tried to write) while the owner's terminal
        # was open.
        opened, closing = mine["open"]
        during = [t for t in theirs["looks"] if opened < t < closing]
        assert len(during) >= 3, ("the runs did not overlap", mine, theirs)
    assert "INTRUDER" not in str(mine["got"]), (mine, theirs)
    assert theirs["wrote"] == [], (mine, theirs)
    assert_grader_still_works(sandbox)


# A run that holds every kind of lock (and lease) it can on a file all runs share; and one that
# looks for them. numpy's own __init__.py is bound read-only into every run of a backend.
LOCK_HOLDER = """
import errno, fcntl, json, os, struct, time
import numpy

def f(a, n):
    path = numpy.__file__
    fd = os.open(path, os.O_RDONLY)
    taken = {}
    def attempt(name, call):
        try:
            call()
            taken[name] = 0
        except OSError as exc:
            taken[name] = exc.errno
    lock = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)
    attempt("flock", lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
    attempt("posix lock", lambda: fcntl.fcntl(fd, fcntl.F_SETLK, lock))
    attempt("ofd lock", lambda: fcntl.fcntl(fd, 37, lock))  # F_OFD_SETLK
    attempt("lease", lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK))
    dirfd = os.open(os.path.dirname(path), os.O_RDONLY)
    attempt("dnotify", lambda: fcntl.fcntl(dirfd, fcntl.F_NOTIFY, fcntl.DN_ACCESS))
    time.sleep(2.5)
    print(json.dumps(taken))
    return a
"""

LOCK_WATCHER = """
import fcntl, json, os, struct
import numpy

def f(a, n):
    fd = os.open(numpy.__file__, os.O_RDONLY)
    seen = {}
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["flock"] = "free"
    except OSError as exc:
        seen["flock"] = exc.errno
    probe = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
    for name, cmd in (("posix", fcntl.F_GETLK), ("ofd", 36)):  # 36: F_OFD_GETLK
        try:
            kind = struct.unpack("hhqqi", fcntl.fcntl(fd, cmd, probe))[0]
            seen[name] = "free" if kind == fcntl.F_UNLCK else "HELD"
        except OSError as exc:
            seen[name] = exc.errno
    print(json.dumps(seen))
    return a
"""

DENIED = {errno.EPERM, errno.ENOSYS}


def test_no_lock_or_lease_on_shared_files_carries_a_signal(sandbox: Sandbox) -> None:
    runs = side_by_side(
        sandbox, {"holder": LOCK_HOLDER, "watcher": LOCK_WATCHER}, SIDE_BY_SIDE, 0.8
    )
    holder, watcher = runs["holder"], runs["watcher"]
    taken, seen = report(holder), report(watcher)
    assert set(taken.values()) <= DENIED, taken
    assert len(taken) == 5
    # Nothing the holder did shows, and the watcher could not even ask.
    assert "HELD" not in seen.values(), seen
    assert seen["flock"] in DENIED and seen["posix"] in DENIED and seen["ofd"] in DENIED, seen
    assert_grader_still_works(sandbox)


WATCHES = """
import ctypes, json, os, time

libc = ctypes.CDLL(None, use_errno=True)

def f(a, n):
    out = {}
    instances = 0
    first_error = 0
    while instances < 1000:
        if libc.inotify_init1(0) < 0:
            first_error = ctypes.get_errno()
            break
        instances += 1
    out["inotify instances"] = instances
    out["inotify error"] = first_error
    out["fanotify"] = 0 if libc.fanotify_init(0, 0) >= 0 else ctypes.get_errno()
    time.sleep(1.0)
    print(json.dumps(out))
    return a
"""


def test_no_file_watches_and_no_share_of_the_host_s_inotify_quota(sandbox: Sandbox) -> None:
    """Watching the shared runtime files would show other runs' opens; and a run that took every
    inotify instance of its host uid made the host's own inotify_init1 fail."""
    libc = ctypes.CDLL(None, use_errno=True)
    host_failures: list[int] = []

    def host_watches() -> None:
        fd = libc.inotify_init1(0)
        if fd < 0:
            host_failures.append(ctypes.get_errno())
        else:
            libc.close(fd)

    result = run_watched(sandbox, WATCHES, host_watches, limits=SIDE_BY_SIDE)
    out = report(result)
    assert out["inotify instances"] == 0, out
    assert out["inotify error"] in DENIED and out["fanotify"] in DENIED, out
    assert host_failures == []
    assert_grader_still_works(sandbox)


# By system call (x86_64 socket = 41, socketpair = 53), past Python's own refusal.
SOCKETS = """
import ctypes, json

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FDS = (ctypes.c_int * 2)()

def call(nr, *args):
    ctypes.set_errno(0)
    return "created" if libc.syscall(nr, *args) >= 0 else ctypes.get_errno()

def f(a, n):
    families = {"vsock": (40, 1), "inet": (2, 2), "inet6": (10, 1), "netlink": (16, 3),
                "packet": (17, 3), "unix": (1, 1)}
    out = {name: call(41, family, kind, 0) for name, (family, kind) in families.items()}
    out["inet pair"] = call(53, 2, 1, 0, FDS)
    out["unix pair"] = call(53, 1, 1, 0, FDS)
    print(json.dumps(out))
    return a
"""


def test_no_socket_of_any_family_can_be_created(sandbox: Sandbox) -> None:
    out = report(run(sandbox, SOCKETS))
    # The sandbox's filter refuses every family but AF_UNIX (EAFNOSUPPORT), the worker's own
    # every socket (EPERM: sandbox/inside/nochannels.py; test_worker_filter.py).
    refused = {errno.EAFNOSUPPORT, errno.EPERM}
    assert set(out.values()) <= refused, out
    assert out["unix"] == out["unix pair"] == errno.EPERM, out
    assert_grader_still_works(sandbox)
