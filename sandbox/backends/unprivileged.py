"""Running sandboxes as unprivileged host users when the grader is root.

Runs never execute as host uid 0: per-user kernel quotas (inotify instances, processes, pipe
buffers, ...) would be shared with the host's own root, and RLIMIT_NPROC does not apply to it. A
grader running as root gives each run its own host uid (``HostUids``: ``base`` + 1..65535) and the
fork server's zygote uid ``base``, in a user namespace whose uids 0..65535 are ``base``.. (``userns
_with_range``), so the zygote can give each of its runs a uid of its own too.

Every file a run's uid must reach is in the runtime tree (``runtree.py``), world-readable
wherever the interpreter itself lives.
"""

from __future__ import annotations

import ctypes
import logging
import os
import secrets
import subprocess
import threading
from pathlib import Path

log = logging.getLogger(__name__)

CLONE_NEWUSER = 0x10000000
UIDS_PER_RANGE = 65536

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class HostUids:
    """Host uids for runs, one per live run: ``base`` + 1..65535, chosen at random among those
    not in use (``base`` itself is the fork server's zygote's)."""

    def __init__(self, base: int) -> None:
        if base <= 0:
            raise ValueError("a run's host uid is never 0: the uid base must be positive")
        self.base = base
        self._lock = threading.Lock()
        self._used: set[int] = set()

    def take(self) -> int:
        with self._lock:
            while True:
                uid = self.base + 1 + secrets.randbelow(UIDS_PER_RANGE - 1)
                if uid not in self._used:
                    self._used.add(uid)
                    return uid

    def give(self, uid: int) -> None:
        with self._lock:
            self._used.discard(uid)


def give_back_uid(uids: HostUids, uid: int, processes_gone: bool) -> None:
    """Return a run's uid to the range once all its processes are dead. When its cgroup could
    not be removed one may still live: the uid is kept out of use for good (a leak of one of
    65535, logged) so that no later run ever shares a uid with it."""
    if processes_gone:
        uids.give(uid)
    else:
        log.error("a run's processes may have outlived it: its host uid %d is not reused", uid)


def become(uid: int) -> None:
    """Between fork and exec: drop every group and become ``uid`` (and its same-numbered gid)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def userns_with_range(base: int) -> int:
    """An fd of a new user namespace owned by host uid ``base``, whose uids and gids
    0..65535 are the host's ``base``..``base`` + 65535 (only root may map more than its own uid).
    Its owner is unprivileged, so what its processes are charged in the host's per-user kernel
    counters is charged to ``base``, never to root."""

    def enter() -> None:
        become(base)
        _check(_libc.unshare(CLONE_NEWUSER), "unshare")

    holder = subprocess.Popen(
        ["sleep", "60"], preexec_fn=enter, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"}
    )
    try:
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{holder.pid}/{name}").write_text(f"0 {base} {UIDS_PER_RANGE}\n")
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.kill()
        holder.wait()
