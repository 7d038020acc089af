"""The sandbox's system-call policy: one list of rules (``rules``), compiled to BPF with
libseccomp (pyseccomp) for the bwrap backends and written as Docker's JSON profile by the docker
backend, so every backend denies the same calls.

Default allow, with an error for the system calls a numeric submission never needs and that widen
the kernel's attack surface, could reach outside the namespaces, or let one run signal to or watch
another through what runs share (the read-only runtime files, the kernel's socket families).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import tempfile
from dataclasses import dataclass
from functools import lru_cache

import pyseccomp as sc

DENIED = (
    # debugging other processes and reading their memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    # mounts and namespaces (bwrap has set them up before the filter is loaded)
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # kernel keyrings, BPF, perf, io_uring, userfaultfd
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # modules, kexec, reboot, swap, accounting, clocks, syslog, quotas
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "syslog", "quotactl", "vhangup", "iopl", "ioperm",
    # file handles bypass path checks; personality can disable ASLR
    "name_to_handle_at", "open_by_handle_at", "personality", "lookup_dcookie", "uselib",
    # Locks and watches on files every run shares (the runtime is bind-mounted read-only into all
    # of them) carry signals between runs, and a watch sees other runs' opens and reads; the
    # instances also count against a per-user kernel quota.
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init",
    "fanotify_mark",
    # Host-wide numbers (free and shared RAM, the host's thread count, load): a concurrent run
    # moves them. glibc ignores sysinfo's error (sysconf's physical-page counts become undefined).
    "sysinfo",
    # A bound file's file system is the host's: its free blocks and inodes are host-wide numbers
    # (no run can write to it, so they carry nothing between runs; they show the host's activity).
    "statfs", "fstatfs", "ustat",
    # Page-cache residency of the files every run shares: evicting, prefetching or probing a
    # page of them signals to a later run. No numeric submission needs these.
    # cachestat (kernel 6.5) is known to this libseccomp (Debian 12's 2.5.4 backports the
    # table); one that does not know it skips the rule, which the sandbox tests would catch.
    "fadvise64", "readahead", "mincore", "process_madvise", "cachestat",
)  # fmt: skip

TIOCSTI = 0x5412  # push characters into the controlling terminal's input
NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
# fcntl commands that take, test or watch a lock, a lease or a directory (the rest, e.g.
# F_GETFL/F_SETFL/F_DUPFD, stay allowed): F_GETLK, F_SETLK, F_SETLKW, their open-file-description
# forms, F_SETLEASE, F_GETLEASE and F_NOTIFY (dnotify).
FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)
# madvise advice that prefetches, deactivates or evicts pages, so moves shared file pages in or
# out of the cache: MADV_WILLNEED, MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ/WRITE. The rest
# (MADV_DONTNEED, MADV_FREE, MADV_HUGEPAGE...: malloc and numpy use them) stays allowed.
MADVISE_DENIED = (3, 20, 21, 22, 23)
RWF_NOWAIT = 0x8  # a read that fails rather than wait for the disk: a residency probe
# A pidfd's inode number is taken from one host-wide counter that every new pid and thread on the
# host advances: a run that starts threads moves it, a concurrent or later run reads it with
# fstat. Every way a run could get a pidfd is refused: pidfd_open (ENOSYS, as on a kernel without
# it, so libraries fall back), clone's CLONE_PIDFD, SO_PEERPIDFD and SO_PASSPIDFD (SCM_PIDFD).
CLONE_PIDFD = 0x1000
SO_PASSPIDFD = 76
SO_PEERPIDFD = 77
# Socket cookies come from one host-wide counter (per-CPU batches of 4096) a run moves by asking
# many sockets for theirs; a network namespace's cookie counts the namespaces the host has made.
SO_COOKIE = 57
SO_NETNS_COOKIE = 71


# What the fork server's zygote still needs to build each child's own namespaces. The zygote
# never runs submission code, and every child installs the full filter before it does.
ZYGOTE_ALLOWED = frozenset({"mount", "umount2", "unshare"})
# A fork-server run installs the full filter in two parts (see zygote.py): while it waits for a
# job, all of it but these rules (it still mounts its /tmp once it knows its size), then, right
# after that mount, a filter of these rules alone. Stacked, the two refuse exactly what the full
# filter does, and the large part's cost is off the submission's path.
LATE = frozenset({"mount"})


@dataclass(frozen=True)
class Rule:
    """Fail ``syscall`` with ``errno`` when every condition holds: (argument index, op, value),
    op ``"eq"`` (argument == value), ``"ne"`` (argument != value) or ``"has"`` (every bit of
    value set in the argument)."""

    syscall: str
    errno: int = errno.EPERM
    where: tuple[tuple[int, str, int], ...] = ()
    docker: bool = True  # also in Docker's profile


# runc loads the profile before it closes its inherited fds, which checks with fstatfs that
# /proc/self/fd is procfs: a container denied fstatfs cannot start.
DOCKER_NEEDS = frozenset({"fstatfs"})


@lru_cache
def rules(zygote: bool = False) -> tuple[Rule, ...]:
    """The policy (``zygote``: the fork server's own, which still lets it create namespaces and
    mounts for its children)."""
    out = [
        Rule(name, docker=name not in DOCKER_NEEDS)
        for name in DENIED
        if not (zygote and name in ZYGOTE_ALLOWED)
    ]
    out.append(Rule("ioctl", where=((1, "eq", TIOCSTI),)))
    out += [Rule("fcntl", where=((1, "eq", cmd),)) for cmd in FCNTL_DENIED]
    # Unix sockets only (multiprocessing's pipes and queues use them): no VSOCK port space shared
    # with the VM, no netlink, no other family the kernel might offer inside an empty netns.
    for call in ("socket", "socketpair"):
        out.append(Rule(call, errno.EAFNOSUPPORT, ((0, "ne", socket.AF_UNIX),)))
    out += [Rule("madvise", where=((2, "eq", advice),)) for advice in MADVISE_DENIED]
    out += [Rule(call, where=((5, "has", RWF_NOWAIT),)) for call in ("preadv2", "pwritev2")]
    if not zygote:
        out += [Rule("clone", where=((0, "has", flag),)) for flag in NAMESPACE_FLAGS]
    out.append(Rule("pidfd_open", errno.ENOSYS))
    out.append(Rule("clone", where=((0, "has", CLONE_PIDFD),)))
    out += [
        Rule("getsockopt", where=((2, "eq", option),))
        for option in (SO_PEERPIDFD, SO_COOKIE, SO_NETNS_COOKIE)
    ]
    # An eventfd's id (in /proc/self/fdinfo) is the lowest free in one host-wide allocator: a run
    # holding k eventfds shifts the id a concurrent run's next eventfd gets. ENOSYS: no numeric
    # library uses them, and a library that might falls back as on a kernel without them.
    out += [Rule(call, errno.ENOSYS) for call in ("eventfd", "eventfd2")]
    out.append(Rule("setsockopt", where=((2, "eq", SO_PASSPIDFD),)))
    # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone.
    out.append(Rule("clone3", errno.ENOSYS))
    return tuple(out)


def _arg(index: int, op: str, value: int) -> sc.Arg:
    if op == "eq":
        return sc.Arg(index, sc.MASKED_EQ, 0xFFFFFFFF, value)
    if op == "ne":
        return sc.Arg(index, sc.NE, value)
    return sc.Arg(index, sc.MASKED_EQ, value, value)


@lru_cache
def filter_bpf(zygote: bool = False, part: str = "all") -> bytes:
    """The compiled filter for the host architecture: every rule (``part`` "all"), all but the
    ``LATE`` ones ("early") or only those ("late")."""
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for rule in rules(zygote):
        if part != "all" and (rule.syscall in LATE) != (part == "late"):
            continue
        with contextlib.suppress(ValueError, OSError):  # not a system call on this architecture
            flt.add_rule(sc.ERRNO(rule.errno), rule.syscall, *[_arg(*c) for c in rule.where])
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def filter_fd(zygote: bool = False, part: str = "all") -> int:
    """A readable fd holding the BPF program, for ``bwrap --seccomp FD``. The caller closes it."""
    fd = os.memfd_create("tj-seccomp", 0)
    os.write(fd, filter_bpf(zygote, part))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_DOCKER_OPS = {"eq": "SCMP_CMP_MASKED_EQ", "ne": "SCMP_CMP_NE", "has": "SCMP_CMP_MASKED_EQ"}


def docker_profile() -> dict[str, object]:
    """The same policy as Docker's JSON seccomp profile (but what runc itself needs)."""
    syscalls: list[dict[str, object]] = []
    for rule in rules():
        if not rule.docker:
            continue
        entry: dict[str, object] = {
            "names": [rule.syscall],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": rule.errno,
        }
        if rule.where:
            entry["args"] = [
                {
                    "index": index,
                    # MASKED_EQ compares (argument & value) == valueTwo.
                    "value": {"eq": 0xFFFFFFFF, "ne": value, "has": value}[op],
                    "valueTwo": 0 if op == "ne" else value,
                    "op": _DOCKER_OPS[op],
                }
                for index, op, value in rule.where
            ]
        syscalls.append(entry)
    return {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": syscalls}
