"""A per-run cgroup with memory and pids limits and a CPU quota, where the host lets us create one.

cgroup v2 (a single unified hierarchy with the memory, pids and cpu controllers) or v1 (separate
``memory``, ``pids``, ``cpu`` and ``cpuacct`` hierarchies, the last two often mounted together).
The run's cgroup is created under the grader's own, the launcher joins it before exec (so every
sandboxed process is counted from its first fork), and it is emptied and removed afterwards. Where
nothing can be created the run goes on with rlimits only; that is logged once.

CPU: the cfs quota holds all of a run's processes and threads together to one core (what one
numeric submission with one BLAS thread needs; a run can no more take the others' share of the
machine by forking), and the cgroup's CPU accounting is what the host holds against the run's CPU
time limit (``cpu_seconds``), across all its processes. Where the host has no cpu controller to
give, memory and pids limits still apply, there is no quota, and the run's CPU time is read from
its process tree (``proctree.py``); that is logged once too.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)
CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "tensorjudge-"
REMOVE_SECONDS = 5.0
# A run's cgroup older than this was left by a grader that died mid-run; an empty one can go.
STALE_SECONDS = 600.0
# How often a parent is swept for them: a sweep lists every cgroup beside the run's, which costs
# more than making the run's own (one is made per run, ahead of demand, on the server's process).
SWEEP_EVERY_SECONDS = 60.0
_swept: dict[Path, float] = {}
_swept_lock = threading.Lock()
# One core per run: its quota is one full period of every period.
CPU_PERIOD_US = 100_000
CPU_QUOTA_US = 100_000
_warned = False
_warned_cpu = False


def _sweep(parent: Path) -> None:
    now = time.time()
    with _swept_lock:
        if now - _swept.get(parent, -SWEEP_EVERY_SECONDS) < SWEEP_EVERY_SECONDS:
            return
        _swept[parent] = now
    with contextlib.suppress(OSError):
        for d in parent.glob(f"{PREFIX}*"):
            with contextlib.suppress(OSError):
                if now - d.stat().st_mtime > STALE_SECONDS:
                    d.rmdir()  # fails, harmlessly, while it still has processes


def _own_paths() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                paths[c] = path
    return paths


@functools.cache
def _v1_base(ctl: str) -> Path | None:
    """The mounted cgroup v1 hierarchy of ``ctl`` (resolved: cpu and cpuacct are often one
    hierarchy behind two links), None if there is none; mounts do not change under a grader."""
    base = CGROUP_ROOT / ctl
    return base.resolve() if (base / "cgroup.procs").exists() else None


def _no_cpu(reason: object) -> None:
    global _warned_cpu
    if not _warned_cpu:
        _warned_cpu = True
        log.warning(
            "no per-run CPU controller (%s): no CPU quota, and a run's CPU time is read from "
            "its processes in /proc",
            reason,
        )


class RunCgroup:
    def __init__(self, dirs: dict[str, Path], version: int, memory_bytes: int, max_tasks: int):
        # "memory"/"pids"/"cpu"/"cpuacct" -> cgroup directory (one directory on v2; "cpu" and
        # "cpuacct" only where the host gives them)
        self.dirs = dirs
        self.version = version
        self.memory_bytes = memory_bytes
        self.max_tasks = max_tasks

    @classmethod
    def create(
        cls, memory_bytes: int, max_tasks: int, run_id: str = "", v2_parent: Path | None = None
    ) -> RunCgroup | None:
        """``v2_parent``: a delegated cgroup v2 directory to create runs in. cgroup v2 lets a
        cgroup enable controllers for children only while it holds no process itself, so the
        grader's own cgroup works only if it is the root; a deployment names an empty one."""
        name = f"{PREFIX}{run_id or uuid.uuid4().hex[:16]}"
        own = _own_paths()
        made: list[Path] = []
        try:
            if (CGROUP_ROOT / "cgroup.controllers").exists():
                parent = v2_parent or CGROUP_ROOT / own.get("", "/").lstrip("/")
                enabled = (parent / "cgroup.subtree_control").read_text().split()
                if not {"memory", "pids"} <= set(enabled):
                    (parent / "cgroup.subtree_control").write_text("+memory +pids")
                if "cpu" not in enabled:
                    try:
                        (parent / "cgroup.subtree_control").write_text("+cpu")
                    except OSError as exc:
                        _no_cpu(exc)
                _sweep(parent)
                d = parent / name
                d.mkdir()
                made.append(d)
                (d / "memory.max").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
                (d / "pids.max").write_text(str(max_tasks))
                # cpu.stat's usage_usec counts CPU time with or without the cpu controller.
                v2 = {"memory": d, "pids": d, "cpuacct": d}
                if (d / "cpu.max").exists():
                    (d / "cpu.max").write_text(f"{CPU_QUOTA_US} {CPU_PERIOD_US}")
                    v2["cpu"] = d
                return cls(v2, 2, memory_bytes, max_tasks)
            dirs: dict[str, Path] = {}
            for ctl in ("memory", "pids", "cpu", "cpuacct"):
                base = _v1_base(ctl)
                if base is None:
                    if ctl in ("cpu", "cpuacct"):
                        _no_cpu(f"no cgroup v1 {ctl} hierarchy")
                        continue
                    raise OSError(f"no cgroup v1 {ctl} hierarchy")
                d = base / own.get(ctl, "/").lstrip("/") / name
                same = [c for c, known in dirs.items() if known == d]
                if same:  # cpu and cpuacct mounted together: one directory
                    dirs[ctl] = dirs[same[0]]
                    continue
                _sweep(d.parent)
                d.mkdir()
                made.append(d)
                dirs[ctl] = d
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (dirs["pids"] / "pids.max").write_text(str(max_tasks))
            if "cpu" in dirs:
                (dirs["cpu"] / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(CPU_QUOTA_US))
            return cls(dirs, 1, memory_bytes, max_tasks)
        except OSError as exc:
            for d in reversed(made):
                with contextlib.suppress(OSError):
                    d.rmdir()
            global _warned
            if not _warned:
                _warned = True
                log.warning(
                    "no per-run cgroup (%s): memory and process limits are rlimits only", exc
                )
            return None

    def set_limits(self, memory_bytes: int, max_tasks: int) -> None:
        """Change the limits of a cgroup made ahead of demand (a fork server's spare run)."""
        if memory_bytes != self.memory_bytes:
            mem = self.dirs["memory"]
            if self.version == 2:
                (mem / "memory.max").write_text(str(memory_bytes))
            else:
                # v1 requires memory.limit_in_bytes <= memory.memsw.limit_in_bytes at all times.
                files = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
                if memory_bytes > self.memory_bytes:
                    files.reverse()
                for name in files:
                    try:
                        (mem / name).write_text(str(memory_bytes))
                    except OSError:
                        if "memsw" not in name:  # memsw exists only with swap accounting
                            raise
            self.memory_bytes = memory_bytes
        if max_tasks != self.max_tasks:
            (self.dirs["pids"] / "pids.max").write_text(str(max_tasks))
            self.max_tasks = max_tasks

    def procs_files(self) -> list[str]:
        """Files the launcher writes "0" into, before exec, to join the cgroup."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def cpu_cores(self) -> float | None:
        """The most CPU seconds the run can use per second (its quota), None without one."""
        return CPU_QUOTA_US / CPU_PERIOD_US if "cpu" in self.dirs else None

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by every process the cgroup ever held, None if unreadable."""
        d = self.dirs.get("cpuacct")
        return cpu_seconds_in(d) if d is not None else None

    def oom_killed(self) -> bool:
        d = self.dirs["memory"]
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (d / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    def oom_watch(self) -> int | None:
        """An eventfd that becomes readable when the run hits its memory limit and the kernel's
        OOM killer acts, so the host can end the run then instead of at its wall clock (a run
        whose memory ran out often hangs: a killed child's parent waits for it forever). cgroup
        v1 only (``cgroup.event_control``); None elsewhere, where the run's end still reads
        ``oom_killed``. Register it before the run is released; the caller closes it."""
        if self.version != 1:
            return None
        mem = self.dirs["memory"]
        efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            control = os.open(mem / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            try:
                (mem / "cgroup.event_control").write_text(f"{efd} {control}")
            finally:
                os.close(control)  # the registration holds what it needs of it
        except OSError:
            os.close(efd)
            return None
        return efd

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (one pass; ``remove`` repeats it)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs["pids"] / "cgroup.kill").write_text("1")
        # Every process of a run is in each of its v1 hierarchies' cgroups alike (it joined them
        # all before it ran anything, its children inherit them, and it can write to none), so
        # one list names them all.
        with contextlib.suppress(OSError, ValueError):
            for pid in (int(p) for p in (self.dirs["pids"] / "cgroup.procs").read_text().split()):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Kill what is left and remove the cgroup; a dying fork bomb can take a moment. False
        when a directory outlived the deadline: a process of the run may still be alive."""
        deadline = time.monotonic() + REMOVE_SECONDS
        removed = True
        for d in set(self.dirs.values()):
            # Usually its processes are gone by now and the removal succeeds at once; while one
            # is left (the kernel refuses to remove a cgroup that holds a process) it is killed,
            # and the removal is tried again, fast first, then backing off.
            pause = 0.0005
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        log.warning("could not remove cgroup %s", d)
                        removed = False
                        break
                    self.kill_all()
                    time.sleep(pause)
                    pause = min(pause * 2, 0.01)
        return removed


def cpu_seconds_in(d: Path) -> float | None:
    """The CPU time counted in cgroup directory ``d`` (v1 cpuacct or v2), None if unreadable."""
    try:
        if (d / "cpuacct.usage").exists():
            return int((d / "cpuacct.usage").read_text()) / 1e9
        for line in (d / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        pass
    return None


def process_cgroup_dir(pid: int) -> Path | None:
    """The cgroup directory that accounts the CPU time of process ``pid`` (v1 cpuacct, or v2)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        ctls = controllers.split(",")
        if "cpuacct" in ctls:
            return CGROUP_ROOT / ",".join(ctls) / path.lstrip("/")
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        for line in lines:
            if line.startswith("0::"):
                return CGROUP_ROOT / line[3:].lstrip("/")
    return None


def join(procs_files: list[str]) -> None:
    """Runs in the launcher between fork and exec: no allocation-heavy work here."""
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
