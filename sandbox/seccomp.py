"""The seccomp filter of the bwrap backend, built with libseccomp (pyseccomp) and exported as BPF.

Default allow, with EPERM for the system calls a numeric submission never needs and that widen the
kernel's attack surface or could reach outside the namespaces.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
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


# What the fork server's zygote still needs to build each child's own namespaces. The zygote
# never runs submission code, and every child installs the full filter before it does.
ZYGOTE_ALLOWED = frozenset({"mount", "umount2", "unshare"})


@lru_cache
def filter_bpf(zygote: bool = False) -> bytes:
    """The compiled filter for the host architecture (``zygote``: the fork server's own, which
    lets it create namespaces and mounts for its children)."""
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        if zygote and name in ZYGOTE_ALLOWED:
            continue
        with contextlib.suppress(ValueError, OSError):  # not a system call on this architecture
            flt.add_rule(deny, name)
    flt.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    for flag in () if zygote else NAMESPACE_FLAGS:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def filter_fd(zygote: bool = False) -> int:
    """A readable fd holding the BPF program, for ``bwrap --seccomp FD``. The caller closes it."""
    fd = os.memfd_create("tj-seccomp", 0)
    os.write(fd, filter_bpf(zygote))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
