"""A numpy-preloaded fork server in front of the bwrap backend.

One long-lived bwrap sandbox (every namespace, read-only minimal view, a seccomp filter that
still allows creating namespaces and mounts) runs the zygote (``sandbox/inside/zygote.py``) with
numpy imported. Each submission is a fresh fork of it that enters its own user/mount/pid/net/
ipc/uts namespaces, a new /tmp, an empty /proc, no capabilities, the run's rlimits and the FULL
seccomp filter before it reads its job (see the zygote's docstring). The host learns the run's
host pid from the credentials of its first message, moves it into the run's own cgroup (memory,
pids) and only then lets it go on. The wall clock is the host's: on timeout it kills the run's
pid-namespace init (which takes its whole namespace with it) and the cgroup.

Spares: a background thread keeps ``spares`` runs primed ahead of demand: forked, in their own
namespaces and their own cgroup, waiting for a go-ahead; nothing of any submission exists in them
yet. A submission takes one (its cgroup limits are set to the request's, then the go-ahead carries
its rlimits and /tmp size) and the thread primes the next. Each primed run serves one submission
or none. This takes the fork, the namespaces and, above all, the cgroup move off the submission's
path: on cgroup v1 the first write to a ``cgroup.procs`` waits for an RCU grace period (~8 ms
measured here, mostly waiting, not CPU).

The zygote never runs submission code and never reads from a child. If it dies it is restarted
in the background, and runs that could not be forked (or were cut off by its death) run cold.
"""

from __future__ import annotations

import array
import atexit
import collections
import contextlib
import json
import logging
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from sandbox import seccomp
from sandbox.backends import cgroup, residency, unprivileged
from sandbox.backends.bwrap import BwrapSandbox, cpu_budget
from sandbox.backends.common import (
    RawRun,
    apply_rlimits,
    interpret,
    lower_priority,
    read_streams,
    rlimits,
)
from sandbox.backends.runtime import ENTRY, TORCH_RUNTIME_MB
from sandbox.inside.zygote import GO
from sandbox.protocol import Limits, RunRequest, RunResult
from sandbox.wire import encode_job, stream_cap

log = logging.getLogger(__name__)

# The zygote's own sandbox: generous, since each child sets the run's limits for itself.
ZYGOTE_LIMITS = Limits(
    cpu_seconds=10**6,
    wall_seconds=10**6,
    memory_mb=1 << 20,
    max_processes=4096,
    file_bytes=1 << 40,
    tmpfs_mb=1,  # a run's /tmp is a fresh tmpfs its child mounts over this one
)
START_SECONDS = 30.0
HANDSHAKE_SECONDS = 5.0
RETRY_SECONDS = 30.0
# The supervisor and its pid-namespace init on top of the submission's processes.
RUN_TASKS = 2
CGROUP_OVERHEAD_MB = 64
UCRED = struct.Struct("iII")
DEFAULT_SPARES = 2


class ZygoteGone(Exception):
    """The fork server could not fork this run (it is being restarted)."""


class _Zygote:
    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.proc = proc
        self.control = control

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.control.close()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


@dataclass
class _Primed:
    """A forked run waiting for its go-ahead: own namespaces and cgroup, no job yet."""

    sock: socket.socket  # host end of the run socket
    err_r: int  # read end of its stderr pipe
    pidfd: int
    pid: int
    pidns: str
    cg: cgroup.RunCgroup | None
    oom_fd: int | None  # readable once the run's cgroup ran out of memory (``oom_watch``)
    generation: int  # which zygote forked it (``zygote_starts`` then)
    host_uid: int | None = None  # its own host uid, given back once it is gone
    host_uids: unprivileged.HostUids | None = None

    def alive(self) -> bool:
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return not readable

    def discard(self) -> None:
        """End it (a spare that will not be used, or a run that is over) and free its cgroup."""
        _kill_pidfd(self.pidfd)
        self.sock.close()
        os.close(self.err_r)
        _wait_pidfd(self.pidfd, 2.0)
        os.close(self.pidfd)
        if self.oom_fd is not None:
            os.close(self.oom_fd)
        gone = self.cg.remove() if self.cg is not None else True
        if self.host_uid is not None and self.host_uids is not None:
            unprivileged.give_back_uid(self.host_uids, self.host_uid, gone)
            self.host_uid = None


class ForkServerSandbox:
    def __init__(
        self, inner: BwrapSandbox, spares: int = DEFAULT_SPARES, preload_torch: bool | None = None
    ) -> None:
        self.inner = inner
        # The zygote imports torch too where it is in the runtime (unless told not to): every run
        # forked from it then has torch's libraries mapped, and its limits allow for them.
        self.preload_torch = inner.runtime.has_torch if preload_torch is None else preload_torch
        self.spares = max(0, spares)
        self.name = inner.name
        self._lock = threading.Lock()  # guards the zygote and its control socket
        self._zygote: _Zygote | None = None
        self._closed = False
        # For operators, the benchmark and the tests.
        self.forked_runs = 0
        self.cold_runs = 0
        self.zygote_starts = 0
        self.spare_runs = 0  # runs that started from a spare
        self.last_run_id = ""  # runs are found by pid namespace, not by environment marker
        self.last_cgroup_dirs: list[Path] = []
        self.last_pidns = ""
        self._last_pidns_fd = -1
        self.last_host_pid = 0
        self._wanted = threading.Condition(self._lock)
        self._want_start = True
        self._starting = False  # the manager is starting a zygote
        self._spare_pool: collections.deque[_Primed] = collections.deque()
        # Spares are primed with the latest request's limits (the next one usually has the same).
        self._spare_limits = Limits()
        self._in_flight = 0  # runs between go-ahead and end
        # bwrap --die-with-parent dies with the THREAD that launched it: every zygote is launched
        # by this one long-lived thread, never by a request's (possibly short-lived) thread.
        self._manager = threading.Thread(
            target=self._manage, name="sandbox-fork-server", daemon=True
        )
        self._manager.start()
        self._primer = threading.Thread(
            target=self._prime_spares, name="sandbox-fork-spares", daemon=True
        )
        if self.spares:
            self._primer.start()
        # Every run is a copy-on-write fork of the zygote: its memory is shared like the tree's.
        self.residency = residency.ResidencyKeeper(
            "zygote", pids=self._zygote_process, period=inner.residency.period
        ).start()
        atexit.register(_close_at_exit, weakref.ref(self))
        self.wait_ready()

    # ------------------------------------------------------------------ the zygote

    def _command(
        self,
        control_fd: int,
        filter_fds: tuple[int, int],
        seccomp_fd: int,
        userns_fd: int | None,
    ) -> list[str]:
        # Each run mounts a procfs of its own that holds only its processes (see zygote.py); the
        # kernel lets it do so only while the zygote's own /proc is whole.
        argv = self.inner.command(ZYGOTE_LIMITS, seccomp_fd, mask_proc=False)
        # Children create their own user namespaces (bwrap would forbid nesting them).
        argv.remove("--disable-userns")
        # The zygote keeps bwrap's reaper: its runs are in pid namespaces of their own, where
        # their supervisor is pid 1, and the zygote relies on the kernel reaping its children.
        argv.remove("--as-pid-1")
        if userns_fd is not None:
            # The user namespace whose uids are the host's unprivileged range (see
            # unprivileged.py): each child takes a host uid of its own from it.
            i = argv.index("--unshare-all")
            argv[i : i + 2] = ["--userns", str(userns_fd), "--unshare-ipc", "--unshare-pid"]
            argv[i + 4 : i + 4] = ["--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        # SYS_ADMIN and SETPCAP only to uncover /proc at start (see zygote.py); the zygote keeps
        # only what it needs to give each child its own uid, and its children run as 65534 in
        # user namespaces of their own, with no capability.
        k = argv.index("--cap-drop")
        argv[k + 2 : k + 2] = ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
        for cap in ("CAP_SETFCAP", "CAP_SETUID", "CAP_SETGID"):
            argv[k + 2 : k + 2] = ["--cap-add", cap]
        argv[argv.index("--uid") + 1] = "0"
        argv[argv.index("--gid") + 1] = "0"
        # The same package and command as a cold run's, told to serve as the zygote.
        argv.insert(argv.index(ENTRY) + 1, "zygote")
        early, late = filter_fds
        if self.preload_torch:
            argv.append("--preload-torch")
        return [*argv, "--control", str(control_fd), "--filter", str(early), "--late", str(late)]

    def _start_zygote(self) -> _Zygote | None:
        """Launch a zygote and wait until numpy is imported; None if it could not start."""
        # SEQPACKET: one request per message, never glued to the next.
        host_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        seccomp_fd = seccomp.filter_fd(zygote=True)
        filter_fds = (seccomp.filter_fd(part="early"), seccomp.filter_fd(part="late"))
        uids = self.inner.host_uids
        proc: subprocess.Popen[bytes] | None = None
        userns_fd: int | None = None
        try:
            userns_fd = unprivileged.userns_with_range(uids.base) if uids is not None else None
            argv = self._command(zygote_end.fileno(), filter_fds, seccomp_fd, userns_fd)
            extra_fds = [userns_fd] if userns_fd is not None else []
            # The zygote keeps the grader's own RLIMIT_SIGPENDING: each run's user namespace
            # takes its creator's limit as the cap of the count every run is charged to at the
            # top of their namespaces, so a zygote held to one run's share (256) made that share
            # all runs' together: one run holding 256 queued signals left every other run none,
            # a register any two concurrent runs could read (red team, session 12). Each run
            # still gets its own 256 (the go-ahead's rlimits), counted under its own namespace.
            values = [v for v in rlimits(ZYGOTE_LIMITS) if v[0] != resource.RLIMIT_SIGPENDING]

            def preexec() -> None:
                apply_rlimits(values)
                lower_priority()  # every run it forks inherits it
                if uids is not None:
                    self.inner.become_unprivileged(uids.base)

            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(zygote_end.fileno(), *filter_fds, seccomp_fd, *extra_fds),
                env={"PATH": "/usr/bin:/bin"},
                preexec_fn=preexec,
            )
        except OSError as exc:
            log.error("could not start the fork server: %s", exc)
            host_end.close()
            return None
        finally:
            zygote_end.close()
            for fd in filter_fds:
                os.close(fd)
            os.close(seccomp_fd)
            if userns_fd is not None:
                os.close(userns_fd)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], START_SECONDS)
        line = proc.stdout.readline() if ready else b""
        zygote = _Zygote(proc, host_end)
        if line != b"ready\n":
            err = b""
            zygote.kill()
            with contextlib.suppress(Exception):
                err = proc.stderr.read()[-2000:] if proc.stderr else b""
            log.error("the fork server did not start: %s", err.decode("utf-8", "replace"))
            return None
        with self._lock:
            if self._closed:
                zygote.kill()
                return None
            self._zygote = zygote
            self.zygote_starts += 1
            self._wanted.notify_all()  # the primer waits for a zygote
        return zygote

    def _manage(self) -> None:
        while True:
            with self._wanted:
                while not self._want_start and not self._closed:
                    self._wanted.wait()
                if self._closed:
                    return
                self._want_start = False
                self._starting = True
            started = self._start_zygote()
            with self._wanted:
                self._starting = False
                if started is None and not self._closed:
                    self._want_start = True
                    # Retry later, without spinning on a host where it cannot work; runs go cold.
                    self._wanted.wait(RETRY_SECONDS)

    def _restart_in_background(self) -> None:
        with self._wanted:
            if self._starting:
                return  # one is on its way
            if self._zygote is None or not self._zygote.alive():
                self._zygote = None
                self._want_start = True
                self._wanted.notify_all()

    def _zygote_process(self) -> list[int]:
        """The zygote's own Python process: the nearest process under the launcher that is not
        bwrap (its runs are further down)."""
        launcher = self.zygote_pid()
        if launcher is None:
            return []
        try:
            bwrap = os.stat(f"/proc/{launcher}/exe")
            for pid in residency.descendants(launcher):
                exe = os.stat(f"/proc/{pid}/exe")
                if (exe.st_dev, exe.st_ino) != (bwrap.st_dev, bwrap.st_ino):
                    return [pid]
        except OSError:
            pass  # the zygote is being replaced: the next round finds the new one
        return []

    def zygote_pid(self) -> int | None:
        """Host pid of the zygote's bwrap launcher (for tests and operators)."""
        with self._lock:
            return self._zygote.proc.pid if self._zygote and self._zygote.alive() else None

    def wait_ready(self, timeout: float = START_SECONDS) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.zygote_pid() is not None:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        with self._wanted:
            self._closed = True
            self.residency.stop()
            zygote, self._zygote = self._zygote, None
            spares = list(self._spare_pool)
            self._spare_pool.clear()
            self._wanted.notify_all()
        if zygote is not None:
            zygote.kill()
        for primed in spares:
            primed.discard()
        self._hold_namespace(None)
        for thread in (self._manager, self._primer):
            if thread.is_alive() and threading.current_thread() is not thread:
                thread.join(timeout=10)

    # ------------------------------------------------------------------ spares

    def _prime_spares(self) -> None:
        """Keep ``spares`` primed runs ready; runs in its own thread."""
        failures = 0
        while True:
            with self._wanted:
                while not self._closed and not self._should_prime():
                    self._wanted.wait(1.0)
                if self._closed:
                    return
                limits = self._spare_limits
            try:
                primed = self._prime(limits)
            except Exception as exc:
                # The zygote died (it is being restarted) or this host refuses something a run
                # needs (e.g. its cgroup): back off rather than fork in a loop; submissions then
                # fork (or go cold) themselves, and say why.
                if not isinstance(exc, ZygoteGone):
                    log.exception("could not prime a spare run")
                self._restart_in_background()
                failures += 1
                with self._wanted:
                    if not self._closed:
                        self._wanted.wait(min(0.05 * 2**failures, RETRY_SECONDS))
                continue
            failures = 0
            with self._wanted:
                if not self._closed:
                    self._spare_pool.append(primed)
                    continue
            primed.discard()
            return

    def spares_ready(self) -> int:
        """Primed runs of the current zygote waiting for a submission (tests, operators)."""
        with self._lock:
            return sum(p.generation == self.zygote_starts for p in self._spare_pool)

    def _should_prime(self) -> bool:
        """Called with the lock held. Priming competes for the CPU with the runs in flight, so
        while runs are in flight the primer keeps only one spare per run ready (the next
        submission of each busy grading thread); it tops up between runs. Serially that is one
        spare while the run goes on, taken by the next run; with runs side by side, a run that
        found no spare would fork on its own thread and wait there for its cgroup move."""
        if self._zygote is None or not self._zygote.alive():
            return False
        ready = len(self._spare_pool)
        return ready < self.spares and (ready < self._in_flight or self._in_flight == 0)

    def _wake_primer(self) -> None:
        """Called with the lock held: wake the primer only when it has work now. A woken thread
        competes for the interpreter lock with the run's own host thread, so runs do not wake it
        for nothing (it also looks again every second)."""
        if self._should_prime():
            self._wanted.notify_all()

    def _take_spare(self) -> _Primed | None:
        """A live spare or None; the caller's run counts as in flight from here (so the primer,
        woken by the pool's change, does not fork beside it), until ``_run_forked`` ends."""
        dead = []
        taken = None
        with self._wanted:
            self._in_flight += 1
            while self._spare_pool and taken is None:
                primed = self._spare_pool.popleft()
                if primed.generation == self.zygote_starts and primed.alive():
                    taken = primed
                else:  # its zygote died since it was primed
                    dead.append(primed)
            self._wake_primer()
        for primed in dead:
            primed.discard()
        return taken

    # ------------------------------------------------------------------ one run

    def run(self, request: RunRequest) -> RunResult:
        if request.framework == "torch" and not self.preload_torch:
            # A zygote without torch: the run would import it into a cgroup sized for runs that
            # share the zygote's copy. A cold run counts it (runtime_mb) in its own.
            return self.inner.run(request)
        if self.preload_torch and request.limits.runtime_mb < TORCH_RUNTIME_MB:
            limits = request.limits.model_copy(update={"runtime_mb": TORCH_RUNTIME_MB})
            request = request.model_copy(update={"limits": limits})
        try:
            result = self._run_forked(request)
        except ZygoteGone:
            self._restart_in_background()
            with self._lock:
                self.cold_runs += 1
            return self.inner.run(request)
        with self._lock:
            self.forked_runs += 1
        return result

    def _fork(self, host_uid: int | None) -> tuple[socket.socket, int, int]:
        """Ask the zygote for a child (running as ``host_uid``, from the zygote's range); returns
        the host's end of its run socket, the read end of its stderr pipe and the zygote's
        generation."""
        host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        host_end.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        err_r, err_w = os.pipe()
        uids = self.inner.host_uids
        request = {"uid": host_uid - uids.base} if host_uid is not None and uids else {}
        message = json.dumps(request).encode()
        fds = array.array("i", [child_end.fileno(), err_w])
        try:
            with self._lock:
                zygote = self._zygote
                if zygote is None or not zygote.alive():
                    self._zygote = None
                    raise ZygoteGone
                generation = self.zygote_starts
                try:
                    zygote.control.sendmsg(
                        [message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())]
                    )
                except OSError as exc:
                    self._zygote = None
                    zygote.kill()
                    raise ZygoteGone from exc
        except ZygoteGone:
            host_end.close()
            os.close(err_r)
            raise
        finally:
            child_end.close()
            os.close(err_w)
        return host_end, err_r, generation

    def _prime(self, limits: Limits) -> _Primed:
        """Fork a run and move it into its own cgroup; it then waits for its go-ahead."""
        uids = self.inner.host_uids
        host_uid = uids.take() if uids is not None else None
        try:
            sock, err_r, generation = self._fork(host_uid)
        except BaseException:
            if host_uid is not None and uids is not None:
                uids.give(host_uid)
            raise
        pidfd = -1
        cg: cgroup.RunCgroup | None = None
        try:
            pid = _read_pid(sock)
            if pid is None:
                raise ZygoteGone  # the zygote died (or was killed) before the child reported
            try:
                pidfd = os.pidfd_open(pid)
            except ProcessLookupError as exc:
                raise ZygoteGone from exc  # it died with its zygote
            pidns = ""
            with contextlib.suppress(OSError):
                pidns = os.readlink(f"/proc/{pid}/ns/pid")
            if self.inner.use_cgroup:
                memory, tasks = _cgroup_limits(limits)
                cg = cgroup.RunCgroup.create(
                    memory, tasks, os.urandom(8).hex(), self.inner.cgroup_parent
                )
                if cg is not None:
                    try:
                        for path in cg.procs_files():
                            Path(path).write_text(str(pid))
                    except OSError as exc:
                        raise ZygoteGone from exc  # never run without its cgroup: go cold
            oom_fd = cg.oom_watch() if cg is not None else None
            return _Primed(sock, err_r, pidfd, pid, pidns, cg, oom_fd, generation, host_uid, uids)
        except BaseException:
            if pidfd >= 0:
                _kill_pidfd(pidfd)
                _wait_pidfd(pidfd, 2.0)
                os.close(pidfd)
            sock.close()
            os.close(err_r)
            gone = cg.remove() if cg is not None else True
            if host_uid is not None and uids is not None:
                unprivileged.give_back_uid(uids, host_uid, gone)
            raise

    def _run_forked(self, request: RunRequest) -> RunResult:
        try:
            return self._run_in_flight(request)
        finally:
            with self._wanted:
                self._in_flight -= 1
                self._wake_primer()

    def _run_in_flight(self, request: RunRequest) -> RunResult:
        limits = request.limits
        # Before a child is taken or forked (``BwrapSandbox.finish`` says why).
        job = _go(limits) + encode_job(request)
        primed = self._take_spare()
        if primed is not None and primed.cg is not None:
            try:
                primed.cg.set_limits(*_cgroup_limits(limits))
            except OSError:
                log.warning("could not set a spare's cgroup limits; forking a new run")
                primed.discard()
                primed = None
        from_spare = primed is not None
        with self._wanted:
            self._spare_limits = limits
        if primed is None:
            primed = self._prime(limits)
        self.last_pidns = primed.pidns
        self._hold_namespace(primed.pid)
        self.last_host_pid = primed.pid
        self.last_run_id = ""
        self.last_cgroup_dirs = sorted(set(primed.cg.dirs.values())) if primed.cg else []
        cg = primed.cg
        try:
            raw = _collect(primed, job, request)
        finally:
            oom = cg.oom_killed() if cg is not None else False
            primed.discard()
        # The OOM notification may have ended it before the kernel counted the kill.
        raw.oom_killed = oom or raw.oom_killed
        result = interpret(raw, request, self.name)
        zygote_died = self.zygote_pid() is None or self.zygote_starts != primed.generation
        if not _ended(raw) and zygote_died:
            raise ZygoteGone  # cut off by its zygote's death, not by the submission
        if from_spare:
            with self._lock:
                self.spare_runs += 1
        return result

    def _hold_namespace(self, pid: int | None) -> None:
        """Keep the latest run's pid namespace open until the next run. A namespace's number is
        reused as soon as it is freed (the kernel takes the lowest free one), so without this a
        spare primed after the run ended could get the same number, and ``leftovers`` would
        count the waiting spare as a survivor of the run."""
        fd = -1
        if pid is not None:
            with contextlib.suppress(OSError):
                fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        with self._lock:
            previous, self._last_pidns_fd = self._last_pidns_fd, fd
        if previous >= 0:
            os.close(previous)

    def leftovers(self) -> list[int]:
        """Host pids still alive in the latest run's pid namespace."""
        if not self.last_pidns:
            return []
        found = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry.name}/ns/pid") == self.last_pidns:
                        found.append(int(entry.name))
        return found


def _cgroup_limits(limits: Limits) -> tuple[int, int]:
    """(memory bytes, tasks) of a run's cgroup: the run's own processes plus its supervisor."""
    # Not ``runtime_mb``: what the zygote imported (torch) was charged to the zygote's cgroup and
    # is shared, not copied, by its runs; only their address space counts it (the rlimits).
    return (limits.memory_mb + CGROUP_OVERHEAD_MB) * 1024 * 1024, limits.max_processes + RUN_TASKS


def _go(limits: Limits) -> bytes:
    """The go-ahead (see zygote.py): the run's rlimits and /tmp size, right before its job."""
    settings = json.dumps(
        {
            "rlimits": [[w, s, h] for w, (s, h) in rlimits(limits)],
            "tmpfs_bytes": limits.tmpfs_mb * 1024 * 1024,
        }
    ).encode()
    return GO.pack(b"G", len(settings)) + settings


def _read_pid(sock: socket.socket) -> int | None:
    """The child's first byte carries its credentials: its pid as the host sees it."""
    sock.settimeout(HANDSHAKE_SECONDS)
    try:
        data, ancdata, _flags, _addr = sock.recvmsg(1, socket.CMSG_SPACE(UCRED.size))
    except OSError:
        return None
    finally:
        sock.settimeout(None)
    if data != b"R":
        return None
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, _uid, _gid = UCRED.unpack(payload[: UCRED.size])
            return pid if pid > 0 else None
    return None


def _kill_pidfd(pidfd: int) -> None:
    with contextlib.suppress(OSError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def _wait_pidfd(pidfd: int, timeout: float) -> None:
    select.select([pidfd], [], [], timeout)


def _ended(raw: RawRun) -> bool:
    return raw.timed_out or raw.stream_overflow or b'"type":"end"' in raw.stdout


def _collect(run: _Primed, job: bytes, request: RunRequest) -> RawRun:
    """Send the go-ahead and the job, read the result stream within the wall clock."""
    start = time.monotonic()
    cap = stream_cap(request)
    sock, err_r, pidfd, cg = run.sock, run.err_r, run.pidfd, run.cg

    # Most jobs fit the socket's buffer: sent here at once, with no thread to start and
    # schedule; only the rest of a larger one is left to a writer thread.
    sent = _send_now(sock, job)

    def feed() -> None:
        with contextlib.suppress(OSError):
            sock.sendall(memoryview(job)[sent:])
            sock.shutdown(socket.SHUT_WR)

    writer: threading.Thread | None = None
    if sent < len(job):
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
    streams = read_streams(
        sock.fileno(),
        err_r,
        deadline=start + request.limits.wall_seconds,
        cap=cap,
        oom_fd=run.oom_fd,
        cpu=cpu_budget(cg, request.limits, run.pid),
    )
    # The supervisor wrote its last frame, closed its stream or ran out of time: end its whole
    # namespace (not waiting for its exit saves the namespace teardown, ~2 ms).
    _kill_pidfd(pidfd)
    if cg is not None:
        cg.kill_all()
    _wait_pidfd(pidfd, 1.0)
    if writer is not None:
        writer.join(timeout=1.0)
    return streams.raw(returncode=None, wall_seconds=time.monotonic() - start)


def _send_now(sock: socket.socket, job: bytes) -> int:
    """Send what the socket takes without blocking; once the whole job is sent, close the
    writing side (the runner reads to its end). How many bytes were sent."""
    sent = 0
    sock.setblocking(False)
    try:
        while sent < len(job):
            sent += sock.send(memoryview(job)[sent:])
    except (BlockingIOError, InterruptedError):
        pass
    except OSError:
        sent = len(job)  # the run is gone: what it says (or not) is read as it ended
    finally:
        sock.setblocking(True)
    if sent == len(job):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
    return sent


def _close_at_exit(ref: weakref.ref[ForkServerSandbox]) -> None:
    server = ref()
    if server is not None:
        server.close()
