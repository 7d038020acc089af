"""The ``bwrap`` backend: bubblewrap (>= 0.8) with every namespace unshared, a read-only view of
the Python runtime and numpy only, a size-capped /tmp, no capabilities, a seccomp filter, rlimits
and, where the host allows, a per-run cgroup.

Which host uid the sandbox runs as matters: inside its user namespace it is 65534, but per-user
kernel quotas and RLIMIT_NPROC are counted per *host* uid across every user namespace, and host
uid 0 is exempt from RLIMIT_NPROC. So a run never executes as host root: when the grader runs as
root, each run gets its own random unprivileged host uid (``sandbox_host_uid_base`` + 1..65535,
see ``unprivileged.py``), the launcher included, and the process limit counts this run alone.
Otherwise the sandbox keeps the grader's own (unprivileged) uid.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from sandbox import seccomp
from sandbox.backends import cgroup, procmask, proctree, residency, runtree, unprivileged
from sandbox.backends.common import (
    LAUNCHER_TASKS,
    CpuBudget,
    Launched,
    RawRun,
    apply_rlimits,
    blas_kernel_environment,
    collect,
    interpret,
    kill_launched,
    launch,
    lower_priority,
    rlimits,
)
from sandbox.backends.runtime import discover, entry_command
from sandbox.backends.runtree import SITE
from sandbox.inside.zygote import SANDBOX_UID
from sandbox.protocol import Limits, RunRequest, RunResult
from sandbox.wire import encode_job, stream_cap

log = logging.getLogger(__name__)

# Memory for the launcher, bwrap's init and the supervisor on top of the submission's limit.
CGROUP_OVERHEAD_MB = 64


class BwrapSandbox:
    name = "bwrap"

    def __init__(
        self,
        python: Path | None = None,
        bwrap: str = "bwrap",
        host_uid_base: int = 200_000,
        use_cgroup: bool = True,
        cgroup_parent: Path | None = None,
        tree_base: Path | None = None,
        keep_resident_seconds: float = residency.DEFAULT_PERIOD_SECONDS,
    ) -> None:
        self.runtime = discover(python)
        self.bwrap = shutil.which(bwrap) or bwrap
        self.use_cgroup = use_cgroup
        self.cgroup_parent = cgroup_parent
        self.switch_uid = os.geteuid() == 0
        self.host_uid_base = host_uid_base
        # Where runs take their host uids (as root): each reaches the runtime tree, which is
        # world-readable.
        self.host_uids = unprivileged.HostUids(host_uid_base) if self.switch_uid else None
        # Made (or found) now, so the first run does not wait for it. Without it no run starts:
        # a run never falls back to the host's disk.
        self._tree: runtree.RuntimeTree | None = None
        self.tree_error = ""
        try:
            self._tree = runtree.ensure(self.runtime, tree_base)
        except runtree.RuntimeTreeError as exc:
            self.tree_error = str(exc)
            log.error("no sandbox run can start: %s", exc)
        # Every run reads the tree: its pages stay resident whatever runs touch (residency.py).
        tree = self._tree
        self.residency = residency.shared_keeper(
            "tree",
            f"tree:{tree.path if tree else ''}",
            lambda: [tree.path] if tree else [],
            keep_resident_seconds,
        )
        # The latest run's TENSORJUDGE_RUN value and cgroup directories, for diagnostics.
        self.last_run_id = ""
        self.last_cgroup_dirs: list[Path] = []

    def become_unprivileged(self, uid: int) -> None:
        """Between fork and exec, as root: become ``uid``."""
        unprivileged.become(uid)

    def tree(self) -> runtree.RuntimeTree:
        """The runtime tree every sandbox of this backend has as its root."""
        if self._tree is None:
            raise runtree.RuntimeTreeError(self.tree_error)
        return self._tree

    def command(
        self,
        limits: Limits,
        seccomp_fd: int,
        run_id: str = "",
        mask_proc: bool = True,
        preload_torch: bool = False,
    ) -> list[str]:
        """The bwrap command of a run (``mask_proc``: with /proc reduced to the run's own
        processes; the fork server's zygote keeps it whole, see zygote.py; ``preload_torch``:
        its runner imports torch before its job arrives)."""
        rt = self.runtime
        argv = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            # No bwrap reaper as pid 1: it stays dumpable with the job's stdin and the result
            # stream open, so a submission running as its uid (a grader that is not root) could
            # open them through /proc/1/fd, read every case and forge the result stream. The
            # runner's supervisor is pid 1 instead, and it is not dumpable.
            "--as-pid-1",
            "--new-session",
            "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin",
            "--setenv", "HOME", "/tmp",
            "--setenv", "LANG", "C.UTF-8",
            "--setenv", "OPENBLAS_NUM_THREADS", "1",
            # Lets an operator (and the tests) find every process of a run from the host.
            "--setenv", "TENSORJUDGE_RUN", run_id,
            "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox",
        ]  # fmt: skip
        for name, value in blas_kernel_environment().items():
            argv += ["--setenv", name, value]
        # The whole root is the runtime tree, served from memory (see runtree.py): nothing of
        # the host's disk, so nothing whose page cache another run shares.
        argv += ["--ro-bind", str(self.tree().path), "/", "--proc", "/proc"]
        if mask_proc:
            argv += procmask.bwrap_args()
        argv += [
            "--dev", "/dev",
            "--perms", "1777", "--size", str(limits.tmpfs_mb * 1024 * 1024), "--tmpfs", "/tmp",
            "--remount-ro", "/",
            # bwrap's /dev is an unbounded tmpfs (with /dev/shm in it): device nodes still work.
            "--remount-ro", "/dev",
            "--chdir", "/tmp",
            "--seccomp", str(seccomp_fd),
        ]  # fmt: skip
        return (
            argv
            + entry_command(str(rt.executable), SITE)
            + (["--preload-torch"] if preload_torch else [])
        )

    def run(self, request: RunRequest) -> RunResult:
        job = encode_job(request)  # before the launch: see ``finish``
        return self.finish(self.start(request.limits), request, job)

    def start(self, limits: Limits, preload_torch: bool = False) -> StartedSandbox:
        """Launch a sandbox for ``limits``: it imports numpy (and torch with ``preload_torch``,
        which needs ``limits.runtime_mb`` for it) and waits for one job. Every limit but the wall
        clock (which starts with the job) is in force from here on."""
        run_id = secrets.token_hex(8)
        if self._tree is None:
            return StartedSandbox(
                limits=limits, run_id=run_id, cgroup=None, launched=self.tree_error
            )
        cg = (
            cgroup.RunCgroup.create(
                (limits.memory_mb + limits.runtime_mb + CGROUP_OVERHEAD_MB) * 1024 * 1024,
                limits.max_processes + LAUNCHER_TASKS,
                run_id,
                self.cgroup_parent,
            )
            if self.use_cgroup
            else None
        )
        procs_files = cg.procs_files() if cg else []
        values = rlimits(limits)
        host_uid = self.host_uids.take() if self.host_uids is not None else None
        if host_uid is None:
            values = _nproc_beside_own_tasks(values, limits.max_processes)

        def preexec() -> None:
            cgroup.join(procs_files)  # before anything forks, and while still allowed to
            apply_rlimits(values)
            lower_priority()
            if host_uid is not None:
                self.become_unprivileged(host_uid)

        fd = seccomp.filter_fd()
        try:
            launched = launch(
                self.command(limits, fd, run_id, preload_torch=preload_torch),
                preexec_fn=preexec,
                pass_fds=(fd,),
                env={"PATH": "/usr/bin:/bin"},
            )
        finally:
            os.close(fd)  # the launched bwrap holds its own copy
        oom_fd = cg.oom_watch() if cg is not None else None
        return StartedSandbox(
            limits=limits,
            run_id=run_id,
            cgroup=cg,
            launched=launched,
            oom_fd=oom_fd,
            host_uid=host_uid,
            host_uids=self.host_uids,
        )

    def finish(self, started: StartedSandbox, request: RunRequest, job: bytes) -> RunResult:
        """Send ``request``, encoded as ``job``, to a started sandbox, collect its result, then
        destroy it. The job is encoded before the sandbox is launched or taken: its runner
        waits for the job from its start, and the submission can read both processes' start
        times, so encoding while it waits would time the hidden cases' encoding, which grows
        with their size, while what the submission prints is still shown."""
        if request.limits != started.limits:
            started.discard()
            raise ValueError("a sandbox started for other limits cannot run this request")
        cg = started.cgroup
        self.last_run_id = started.run_id
        self.last_cgroup_dirs = sorted(set(cg.dirs.values())) if cg else []
        oom = False
        try:
            if isinstance(started.launched, str):
                raw = RawRun(stdout=b"", launch_error=started.launched)
            else:
                raw = collect(
                    started.launched,
                    job,
                    wall_seconds=request.limits.wall_seconds,
                    stream_cap=stream_cap(request),
                    extra_kill=cg.kill_all if cg else None,
                    oom_fd=started.oom_fd,
                    cpu=cpu_budget(cg, request.limits, started.launched.proc.pid),
                )
        finally:
            if cg is not None:
                oom = cg.oom_killed()
            started.release()
        # The OOM notification may have ended it before the kernel counted the kill.
        raw.oom_killed = oom or raw.oom_killed
        return interpret(_explain_launch_failure(raw), request, self.name)


@dataclass
class StartedSandbox:
    """A launched bwrap sandbox that has not been given its job yet; used for one job only."""

    limits: Limits
    run_id: str
    cgroup: cgroup.RunCgroup | None
    launched: Launched | str  # or why it could not start
    oom_fd: int | None = None  # readable once the run's cgroup ran out of memory
    host_uid: int | None = None  # the run's own host uid, given back when it is over
    host_uids: unprivileged.HostUids | None = None

    def alive(self) -> bool:
        return not isinstance(self.launched, str) and self.launched.proc.poll() is None

    def discard(self) -> None:
        """Kill it unused, with everything it started, and remove its cgroup."""
        cg = self.cgroup
        if not isinstance(self.launched, str):
            kill_launched(self.launched, cg.kill_all if cg else None)
        self.release()

    def release(self) -> None:
        """Free what the host holds for it (its processes are gone): the OOM watch, the cgroup."""
        if self.oom_fd is not None:
            os.close(self.oom_fd)
            self.oom_fd = None
        gone = self.cgroup.remove() if self.cgroup is not None else True
        if self.host_uid is not None and self.host_uids is not None:
            unprivileged.give_back_uid(self.host_uids, self.host_uid, gone)
            self.host_uid = None


def cpu_budget(cg: cgroup.RunCgroup | None, limits: Limits, root_pid: int) -> CpuBudget:
    """The run's CPU budget from now on: over its cgroup's accounting, or without one, over the
    process tree under ``root_pid`` (its launcher, or its supervisor)."""
    if cg is not None and cg.cpu_seconds() is not None:
        return CpuBudget(limits, cg.cpu_seconds, cg.cpu_cores())
    return CpuBudget(limits, lambda: proctree.tree_cpu_seconds(root_pid), None)


def _explain_launch_failure(raw: RawRun) -> RawRun:
    if raw.launch_error and "No such file" in raw.launch_error:
        raw.launch_error = (
            f"bubblewrap is not installed (apt-get install bubblewrap): {raw.launch_error}"
        )
    return raw


def _nproc_beside_own_tasks(
    values: list[tuple[int, tuple[int, int]]], max_processes: int
) -> list[tuple[int, tuple[int, int]]]:
    """RLIMIT_NPROC counts every task of the host uid; without a uid of its own, the run may
    start ``max_processes`` tasks on top of what the grader's user already has."""
    uid = os.getuid()
    own = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    own += len(os.listdir(f"/proc/{entry.name}/task"))
    n = max_processes + own
    return [(w, (n, n)) if w == resource.RLIMIT_NPROC else (w, v) for w, v in values]
