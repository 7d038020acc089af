"""The worker's own seccomp filter: once the submission's code runs, its process (and every
process or thread it starts) makes no new pipe, socket, shared-memory object, aio context,
message queue, huge-page mapping or session.

Each of those takes its inode number from a counter the whole host shares: pipes, sockets,
``memfd_secret``, aio rings, POSIX message queues and huge-page mappings from ``get_next_ino()``,
memfds, shared anonymous mappings (``mmap(-1, n)``, a shared map of ``/dev/zero``) and SysV
shared memory from the kernel's internal tmpfs. A run that creates many moves the counter and a
concurrent or later run reads it from the number of a new one (``fstat``, ``/proc/self/maps``):
refusing their creation starves both ends. Nothing of a run needs them once the submission's
code runs: the supervisor's pipes and the shared region are made before the worker exists.
A new session (``setsid``) is a new scheduler autogroup, numbered by one host-wide counter with
no batching, shown in ``/proc/self/autogroup``: a sender calling it ~8 000 times a second and a
receiver reading its own child's number carried 7-12 bits a second between runs (red team,
session 12). And the worker stays not dumpable (``prctl(PR_SET_DUMPABLE)`` and ``execve``, which
makes a process dumpable again, are refused): a dumpable process owns its ``/proc/self`` files and
may write two that reach other runs, ``autogroup`` (the nice value of a scheduler autogroup every
fork-server run shares, a register any run could set and read, and a host-wide rate limit of ten
writes a second, a clock every run could see) and ``loginuid`` (see ``runner.pin_login_uid``).
(eventfd, io_uring, userfaultfd, perf events, inotify and pidfds are refused for every process of
the run by the sandbox's filter, ``sandbox/seccomp.py``; epoll, timerfd and signalfd all share
one inode, so count nothing.)

The program is written here, not by libseccomp: the runtime has no libseccomp binding, and the
handful of rules is a few BPF instructions. ``tests/sandbox/test_worker_filter.py`` checks the
system-call numbers against libseccomp's tables.

The submission also gets a clear error where Python makes these objects (``os.pipe``,
``socket.socket``...: multiprocessing, subprocess, socket, asyncio): a ``PermissionError`` saying
why, not a bare "Operation not permitted". That is only the message; the filter is the rule.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
from typing import Any

MESSAGE = (
    "this sandbox does not let a submission create pipes, sockets or shared memory "
    "(multiprocessing, subprocess, socket and asyncio need them): compute in this process "
    "(numpy and threads work)"
)

# AUDIT_ARCH_* and the numbers of the refused calls, per architecture. ``None``: the call does
# not exist there.
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "pipe": 22,
            "pipe2": 293,
            "socket": 41,
            "socketpair": 53,
            "memfd_create": 319,
            "memfd_secret": 447,
            "shmget": 29,
            "io_setup": 206,
            "mq_open": 240,
            "setsid": 112,
            "execve": 59,
            "execveat": 322,
            "prctl": 157,
            "mmap": 9,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "pipe2": 59,
            "socket": 198,
            "socketpair": 199,
            "memfd_create": 279,
            "memfd_secret": 447,
            "shmget": 194,
            "io_setup": 0,
            "mq_open": 180,
            "setsid": 157,
            "execve": 221,
            "execveat": 281,
            "prctl": 167,
            "mmap": 222,
        },
    ),
}
# The x32 ABI's calls on x86_64 carry this bit; they are all refused.
X32_BIT = 0x40000000
# mmap's flags: MAP_SHARED (1) and MAP_SHARED_VALIDATE (3) in the low type bits make a shared
# mapping (of anonymous memory or /dev/zero: a new internal-tmpfs inode); MAP_HUGETLB makes a
# hugetlbfs inode (its number taken even when no huge page is free).
MAP_TYPE = 0x0F
MAP_SHARED_TYPES = (0x01, 0x03)
MAP_HUGETLB = 0x40000

# Classic BPF opcodes and seccomp's return values.
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
AND_K = 0x54
RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
NR, ARCH = 0, 4
FLAGS_ARG = 3
PR_SET_DUMPABLE = 4


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str) -> bytes:
    """The BPF program for ``machine`` (``platform.machine()``): EPERM for every refused call
    (mmap only when shared or huge-page, prctl only for PR_SET_DUMPABLE), ENOSYS for another
    architecture's calls."""
    audit_arch, numbers = ARCHES[machine]
    deny = _insn(RET_K, SECCOMP_RET_ERRNO | errno.EPERM)
    out = [
        _insn(LD_W_ABS, ARCH),
        _insn(JEQ_K, audit_arch, jt=1),
        _insn(RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS),
        _insn(LD_W_ABS, NR),
    ]
    if machine == "x86_64":
        out += [_insn(JGE_K, X32_BIT, jf=1), deny]
    for name, number in numbers.items():
        if name not in ("mmap", "prctl"):
            out += [_insn(JEQ_K, number, jf=1), deny]
    # prctl: only PR_SET_DUMPABLE (its option, the first argument, an int).
    out += [
        _insn(JEQ_K, numbers["prctl"], jf=4),
        _insn(LD_W_ABS, 16),
        _insn(JEQ_K, PR_SET_DUMPABLE, jf=1),
        deny,
        _insn(RET_K, SECCOMP_RET_ALLOW),
    ]
    # mmap, last: its flags (the low 32 bits of the fourth argument, little-endian).
    out += [
        _insn(JEQ_K, numbers["mmap"], jf=6),
        _insn(LD_W_ABS, 16 + 8 * FLAGS_ARG),
        _insn(JSET_K, MAP_HUGETLB, jt=3),
        _insn(AND_K, MAP_TYPE),
        _insn(JEQ_K, MAP_SHARED_TYPES[0], jt=1),
        _insn(JEQ_K, MAP_SHARED_TYPES[1], jf=1),
        deny,
        _insn(RET_K, SECCOMP_RET_ALLOW),
    ]
    return b"".join(out)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def fprog(bpf: bytes) -> tuple[Any, SockFprog]:
    """A ``struct sock_fprog`` for a BPF program, and the buffer it points into (keep both)."""
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    return buf, SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# Made ahead of any job (``prepare``, from ``runner.preload``): the program, its buffer and the
# bound prctl, so the worker only makes one call.
PREPARED: list[Any] = []


def prepare() -> None:
    """Build the program for this machine and bind prctl; the socket module is imported here
    too, so a submission's ``import socket`` finds the one ``refuse_in_python`` patched."""
    import socket  # noqa: F401

    machine = platform.machine()
    if machine not in ARCHES:
        return  # ``install`` fails closed
    buf, prog = fprog(program(machine))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    PREPARED[:] = [prctl, buf, prog]


def install() -> None:
    """Install the filter on the calling process, or end it: a worker that could not refuse
    these calls must not run the submission."""
    if not PREPARED:
        prepare()
    try:
        prctl, _buf, prog = PREPARED
        if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs")
        if prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp")
    except (ValueError, OSError):
        os._exit(73)
    refuse_in_python()


def _refused(*_args: Any, **_kwargs: Any) -> Any:
    raise PermissionError(errno.EPERM, MESSAGE)


def refuse_in_python() -> None:
    """Make Python's own entry points to the refused calls say why they fail."""
    for name in ("pipe", "pipe2", "memfd_create"):
        if hasattr(os, name):
            setattr(os, name, _refused)
    socket: Any = sys.modules.get("socket")
    if socket is None:
        return
    socket.socketpair = _refused
    original = socket.socket.__init__

    def init(
        self: Any, family: Any = -1, kind: Any = -1, proto: Any = -1, fileno: Any = None
    ) -> None:
        if fileno is None:
            _refused()
        original(self, family, kind, proto, fileno)

    socket.socket.__init__ = init
