"""The CPU time of a process tree, read from /proc: a run's CPU budget where it has no cgroup.

Each process's own user and system time, plus what its reaped children used (``cutime`` and
``cstime`` include their reaped children in turn). A run's pid-namespace init and supervisor live
as long as the run, and reap what exits under them, so what every process of the run used is
counted once, in the process itself while it lives and in its parent once reaped.
"""

from __future__ import annotations

import contextlib
import os

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state is [0], ppid [1])."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def tree_cpu_seconds(root: int) -> float | None:
    """CPU seconds used by ``root`` and every process under it; None once ``root`` is gone."""
    fields: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                fields[int(entry.name)] = stat
    if root not in fields:
        return None
    children: dict[int, list[int]] = {}
    for pid, stat in fields.items():
        with contextlib.suppress(ValueError):
            children.setdefault(int(stat[1]), []).append(pid)
    total = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        # utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 after the name
        total += sum(int(v) for v in fields[pid][11:15])
        todo.extend(children.get(pid, []))
    return total / TICKS
