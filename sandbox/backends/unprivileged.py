"""Running sandboxes as unprivileged host users when the grader is root.

Runs never execute as host uid 0: per-user kernel quotas (inotify instances, processes, pipe
buffers, ...) would be shared with the host's own root, and RLIMIT_NPROC does not apply to it. A
grader running as root gives each run its own host uid (``HostUids``: ``base`` + 1..65535) and the
fork server's zygote uid ``base``, in a user namespace whose uids 0..65535 are ``base``.. (``userns
_with_range``), so the zygote can give each of its runs a uid of its own too.

An unprivileged uid must reach every file bwrap binds into a sandbox. When the interpreter lives
under a directory other users cannot enter (e.g. a pyenv under a 0700 /root), launches join a
mount namespace made once (``RuntimeView``) in which each such directory is covered by an empty
tmpfs holding only the bound paths, read-only, at their own places: the same paths, nothing else
of the directory visible.

Run as a script (by the grader, as root) it builds that mount namespace::

    python -I -S unprivileged.py PATH...

then writes ``ready`` and waits for its stdin to close; the grader keeps the namespace's fd.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import stat
import subprocess
import sys
import threading
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
UIDS_PER_RANGE = 65536
START_SECONDS = 10.0

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


def reachable_by_others(paths: list[Path]) -> bool:
    """Whether an unprivileged uid can reach every one of ``paths`` (mode bits only)."""
    return all(_blocked_ancestor(p) is None for p in paths)


def _blocked_ancestor(path: Path) -> Path | None:
    """The outermost directory on the way to ``path`` that other users cannot enter."""
    for part in [*reversed(path.parents), path]:
        try:
            mode = part.stat().st_mode
        except OSError:
            return part
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return part
    return None


class RuntimeView:
    """A mount namespace, made once, in which ``paths`` are reachable by any uid (see the module's
    docstring). ``enter`` it between fork and exec, while still root."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def create(cls, paths: list[Path]) -> RuntimeView:
        helper = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__, *map(str, paths)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
        )
        assert helper.stdout is not None and helper.stdin is not None
        try:
            if helper.stdout.readline() != b"ready\n":
                err = helper.stderr.read().decode("utf-8", "replace") if helper.stderr else ""
                raise OSError(f"could not make the sandbox runtime's mount namespace: {err}")
            return cls(os.open(f"/proc/{helper.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC))
        finally:
            helper.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                helper.wait(timeout=START_SECONDS)
            helper.kill()
            helper.wait()

    def enter(self) -> None:
        _check(_libc.setns(self.fd, CLONE_NEWNS), "setns")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _build_view(paths: list[Path]) -> None:
    """In a new mount namespace: cover each blocked directory with a tmpfs that holds only the
    ``paths`` under it, bound read-only."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "")  # nothing of this reaches the host's view
    # A path inside another one comes with it.
    wanted = sorted({p for p in paths if not any(q in p.parents for q in paths)})
    covers: dict[Path, list[Path]] = {}
    for path in wanted:
        blocked = _blocked_ancestor(path)
        if blocked is not None and blocked != path:
            covers.setdefault(blocked, []).append(path)
    for top, inside in covers.items():
        # Opened before the tmpfs hides them; bound from the fd (the kernel follows it).
        fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in inside}
        _mount("tmpfs", str(top), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for path, fd in fds.items():
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                path.mkdir(mode=0o755, exist_ok=True)
            else:
                path.touch(mode=0o644, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC, "")
            _mount(None, str(path), None, MS_BIND | MS_REMOUNT | MS_RDONLY, "")
            os.close(fd)
        _mount(None, str(top), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "")


if __name__ == "__main__":
    os.umask(0o022)
    _build_view([Path(p) for p in sys.argv[1:]])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.read()
