"""What of a bwrap sandbox's /proc is masked: every top-level entry but the processes of the run.

bwrap's ``--proc`` mounts a procfs of the run's pid namespace, but its global files (meminfo,
vmstat, stat, loadavg, pressure/, sys/...) are the host's: numbers that move when a concurrent run
maps memory or runs, a channel between runs. bwrap takes no mount options (procfs' ``subset=pid``
would drop them all), so each entry is covered instead: files by /dev/null (which cannot be
opened there), directories by an empty read-only tmpfs. It is an allowlist, computed from the
host's own /proc listing: pid directories, ``self`` and ``thread-self`` stay, and the links into
them (``mounts`` -> self/mounts, ``net`` -> self/net: per process and per network namespace);
every other entry, one a newer kernel adds included, is covered. The docker backend gives the
engine the same list.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

KEPT = frozenset({"self", "thread-self"})
# What covers a global file: bwrap binds it nodev, so opening it fails (EACCES) either way.
EMPTY_FILE = "/dev/null"


@lru_cache
def masked_entries(proc: Path = Path("/proc")) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files, directories): the top-level entries of ``proc`` that a run must not read."""
    files: list[str] = []
    dirs: list[str] = []
    for entry in sorted(os.scandir(proc), key=lambda e: e.name):
        if entry.name.isdigit() or entry.name in KEPT:
            continue
        if entry.is_symlink():
            # A link into the run's own process entry is per process; a bind over a link would
            # land on its target, so any other link is left to the tests to notice.
            continue
        (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
    return tuple(files), tuple(dirs)


def bwrap_args(proc: Path = Path("/proc")) -> list[str]:
    """bwrap arguments, after ``--proc /proc``, that leave the run's /proc its own processes."""
    files, dirs = masked_entries(proc)
    args: list[str] = []
    for name in files:
        args += ["--ro-bind", EMPTY_FILE, f"/proc/{name}"]
    for name in dirs:
        args += ["--perms", "0555", "--size", "4096", "--tmpfs", f"/proc/{name}"]
        args += ["--remount-ro", f"/proc/{name}"]
    return args
