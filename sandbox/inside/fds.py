"""Closing every inherited file descriptor but a few.

``RLIMIT_NOFILE`` (and so ``sysconf(SC_OPEN_MAX)``) bounds only the descriptors a process opens
from then on: one it inherited above the limit stays open. The fork server's zygote is started
by a host that may hold hundreds (the grader's sockets and database), with its own limit at 64,
so "close everything below the limit" left the host's higher numbers open in every run (the
zygote's user namespace was seen in a submission's worker). The open ones are listed instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

# Without /proc: close up to here (close_range makes a wide range cheap).
FALLBACK_BOUND = 1 << 20


def close_all_but(keep: Iterable[int], first: int = 0) -> None:
    """Close every open descriptor numbered ``first`` or above that is not in ``keep``."""
    kept = set(keep)
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        low = first
        for fd in sorted({k for k in kept if k >= first} | {FALLBACK_BOUND}):
            os.closerange(low, fd)
            low = fd + 1
        return
    for fd in found:
        if fd >= first and fd not in kept:
            with contextlib.suppress(OSError):  # the listing's own, closed by now
                os.close(fd)
