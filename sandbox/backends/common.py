"""What every backend shares: launching a sandbox command, and turning what came back into a
``RunResult``.

``run_command`` is for backends that start a local process (bwrap, process). ``interpret`` is for
every backend, including docker: give it the runner's stdout and what the host observed.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sandbox.protocol import CaseError, Limits, RunRequest, RunResult
from sandbox.wire import OUTPUT_KILL_FACTOR, EndFrameScanner, ParsedStream, parse_stream

SANDBOX_STDERR_CAP = 16 * 1024
# Extra tasks beyond Limits.max_processes: launcher, its init, the supervisor.
LAUNCHER_TASKS = 3
# Queued signals a run may have pending at once, all its processes together; locked memory.
SIGPENDING = 256
MEMLOCK_BYTES = 64 * 1024

# OpenBLAS's kernel choice, where the operator set it on the host (some processors need it: an
# older OpenBLAS computes wrong results or crashes on them). A run's environment is otherwise
# empty, so without these the reference outside and the same code inside would take different
# kernels and differ in the last bits. Not secrets: /proc/cpuinfo tells as much.
BLAS_KERNEL_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def blas_kernel_environment() -> dict[str, str]:
    """The host's settings of ``BLAS_KERNEL_VARIABLES``, for a run's environment."""
    return {name: os.environ[name] for name in BLAS_KERNEL_VARIABLES if name in os.environ}


@dataclass
class RawRun:
    """What the host saw of one sandbox run, before interpretation."""

    stdout: bytes  # the runner's result stream
    stderr: bytes = b""  # the launcher's and supervisor's own stderr (not the submission's)
    returncode: int | None = None
    wall_seconds: float = 0.0
    timed_out: bool = False  # killed by the host's wall clock
    stream_overflow: bool = False  # the result stream passed its byte cap
    oom_killed: bool = False  # the cgroup or container reported an OOM kill
    cpu_exceeded: bool = False  # the run's processes together used up its CPU time
    launch_error: str = ""  # the sandbox could not be started at all


def rlimits(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    """The rlimits every sandboxed process inherits. Soft CPU limit first sends SIGXCPU."""
    cpu = max(1, int(limits.cpu_seconds + 0.999))
    # The shared region is mapped at its full size whatever the cases hold (``encode_job``):
    # its address space is the grader's, not taken from the submission's.
    memory = (limits.memory_mb + limits.runtime_mb) * 1024 * 1024 + limits.input_bytes
    return [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (memory, memory)),
        (resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes)),
        (resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes)),
        (resource.RLIMIT_NOFILE, (64, 64)),
        (resource.RLIMIT_CORE, (0, 0)),
        # Per-user kernel counters a run has little use for: the fork server's runs are all
        # charged, at the top of their user namespaces, to the zygote's host uid, so each run's
        # own share is kept small.
        (resource.RLIMIT_MSGQUEUE, (0, 0)),
        (resource.RLIMIT_MEMLOCK, (MEMLOCK_BYTES, MEMLOCK_BYTES)),
        (resource.RLIMIT_SIGPENDING, (SIGPENDING, SIGPENDING)),
    ]


def apply_rlimits(values: list[tuple[int, tuple[int, int]]]) -> None:
    for which, value in values:
        resource.setrlimit(which, value)


# On top of Limits.cpu_seconds, for what runs in the sandbox besides the submission: the
# supervisor reading the job and checking results, and a cold sandbox's numpy import.
CPU_OVERHEAD_SECONDS = 0.5
# The shortest pause between two readings of a run's CPU time near the end of its budget.
CPU_CHECK_SECONDS = 0.01
# The wall clock is there to end a run that waits (sleeps, blocks) rather than computes. A run
# that shared the machine (more runs of this process watched at once than it has cores, each
# run's quota one core) and still computed at least BUSY_SHARE of a core until its wall-clock
# limit was held back by the others, not waiting: it gets up to WALL_GRACE times the limit, its
# CPU limit ending it if it is heavy, so a grading's verdict does not depend on how many others
# ran beside it. Alone on the machine the wall clock is strict: whether others ran is the
# host's count, which the submission cannot raise (its CPU use it can).
BUSY_SHARE = 0.25
WALL_GRACE = 2.0


class _Watched:
    """The runs this process watches at once (``CpuBudget.watching``), and for each the most
    that ran beside it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: set[CpuBudget] = set()
        self.cores = len(os.sched_getaffinity(0))

    def enter(self, budget: CpuBudget) -> None:
        with self._lock:
            self._budgets.add(budget)
            count = len(self._budgets)
            for other in self._budgets:
                other.most_beside = max(other.most_beside, count)

    def leave(self, budget: CpuBudget) -> None:
        with self._lock:
            self._budgets.discard(budget)

    def count(self) -> int:
        with self._lock:
            return len(self._budgets)


WATCHED = _Watched()


class CpuBudget:
    """One CPU time limit for all of a run's processes and threads, held from outside against the
    accounting of the run's cgroup or container (``usage``: its CPU seconds so far, None when
    unreadable). A run cannot use more than ``cores`` CPU seconds per second, so the host reads
    the usage only when the budget could have run out: a run well inside it costs one reading
    at its start and one at its end."""

    def __init__(
        self, limits: Limits, usage: Callable[[], float | None], cores: float | None
    ) -> None:
        self.seconds = limits.cpu_seconds + CPU_OVERHEAD_SECONDS
        self._usage = usage
        self.cores = cores or float(os.cpu_count() or 1)
        self._base = usage() or 0.0
        self.started = time.monotonic()
        self.graced = False
        self.most_beside = 0  # the most runs watched at once while this one was (itself too)
        self.used = 0.0
        self._next = time.monotonic() + self._wait()

    def exceeded(self) -> bool:
        """Read the usage now; whether the run went past its budget."""
        now = self._usage()
        if now is not None:
            self.used = max(self.used, now - self._base)
        return self.used > self.seconds

    @contextlib.contextmanager
    def watching(self) -> Iterator[CpuBudget]:
        """While the host watches the run: counted among the runs sharing the machine."""
        WATCHED.enter(self)
        try:
            yield self
        finally:
            WATCHED.leave(self)

    def grace(self, deadline: float) -> float | None:
        """At the wall clock's ``deadline``: the later one a run that shared the machine and
        is still computing gets (once, ``WALL_GRACE``), or None when it is to end now."""
        if self.graced or self.most_beside <= WATCHED.cores:
            return None
        self.graced = True
        self.exceeded()
        if self.used < BUSY_SHARE * (time.monotonic() - self.started):
            return None
        return deadline + (deadline - self.started) * (WALL_GRACE - 1)

    def due_and_exceeded(self) -> bool:
        """Whether the budget is gone, reading the usage only once it could be."""
        now = time.monotonic()
        if now < self._next:
            return False
        if self.exceeded():
            return True
        self._next = now + self._wait()
        return False

    def timeout(self, seconds: float) -> float:
        """``seconds``, or less if the usage must be read again before then."""
        return max(0.0, min(seconds, self._next - time.monotonic()))

    def _wait(self) -> float:
        return max((self.seconds - self.used) / self.cores, CPU_CHECK_SECONDS)


@dataclass
class Launched:
    """A started sandbox command waiting for its job on stdin (see ``launch`` and ``collect``)."""

    proc: subprocess.Popen[bytes]
    started: float  # time.monotonic() at launch


# Sandboxes run at this nice value (the API at 0): on a machine that grades and accepts at
# once, the kernel gives accepting submissions the CPU first (a deadline rush: docs/deadlines.md),
# while an idle API leaves every core to grading. Mild, so that a run's wall clock is not spent
# waiting behind the API for long; its CPU limit is CPU time and unaffected.
SANDBOX_NICE = 5


def lower_priority() -> None:
    """In a sandbox's ``preexec_fn``: run it (and all it forks) at ``SANDBOX_NICE``."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if current < SANDBOX_NICE:
        os.setpriority(os.PRIO_PROCESS, 0, SANDBOX_NICE)


def launch(
    argv: Sequence[str],
    *,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
    env: dict[str, str] | None = None,
) -> Launched | str:
    """Start ``argv`` in its own session with pipes for stdin, stdout and stderr; or say why it
    could not start. The runner imports what it needs, then waits for its job."""
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec_fn,  # only async-signal-safe-ish calls: rlimits, cgroup, setuid
            pass_fds=tuple(pass_fds),
            env=env if env is not None else {},
            close_fds=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not start the sandbox: {exc}"
    return Launched(proc=proc, started=time.monotonic())


def kill_launched(launched: Launched, extra_kill: Callable[[], None] | None = None) -> None:
    """Kill the whole process group (and whatever ``extra_kill`` reaches) and reap it."""
    proc = launched.proc
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if extra_kill is not None:
        extra_kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def run_command(
    argv: Sequence[str],
    job: bytes,
    *,
    wall_seconds: float,
    stream_cap: int,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
    env: dict[str, str] | None = None,
    extra_kill: Callable[[], None] | None = None,
) -> RawRun:
    """Start ``argv`` in its own session, send ``job`` on stdin, read stdout up to ``stream_cap``
    bytes, and kill the whole process group once the wall clock runs out."""
    launched = launch(argv, preexec_fn=preexec_fn, pass_fds=pass_fds, env=env)
    if isinstance(launched, str):
        return RawRun(stdout=b"", launch_error=launched)
    return collect(
        launched,
        job,
        wall_seconds=wall_seconds,
        stream_cap=stream_cap,
        extra_kill=extra_kill,
        start=launched.started,
    )


def collect(
    launched: Launched,
    job: bytes,
    *,
    wall_seconds: float,
    stream_cap: int,
    extra_kill: Callable[[], None] | None = None,
    start: float | None = None,
    oom_fd: int | None = None,
    cpu: CpuBudget | None = None,
) -> RawRun:
    """Send ``job`` to a launched sandbox, read its streams (``read_streams``: the wall clock
    runs from ``start``, default now), then kill the whole process group."""
    proc = launched.proc
    if start is None:
        start = time.monotonic()

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if extra_kill is not None:
            extra_kill()

    writer = threading.Thread(target=_feed, args=(proc, job), daemon=True)
    writer.start()
    assert proc.stdout is not None and proc.stderr is not None
    deadline = start + wall_seconds
    streams = read_streams(
        proc.stdout.fileno(),
        proc.stderr.fileno(),
        deadline=deadline,
        cap=stream_cap,
        oom_fd=oom_fd,
        cpu=cpu,
    )
    if streams.timed_out or streams.overflow or streams.oom or streams.cpu_exceeded:
        kill()
    try:
        returncode: int | None = proc.wait(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
    except subprocess.TimeoutExpired:
        streams.timed_out = True
        kill()
        returncode = proc.wait()
    # The launcher is gone; anything it left behind (there should be nothing) goes too.
    kill()
    proc.stdout.close()
    proc.stderr.close()
    writer.join(timeout=1.0)
    return streams.raw(returncode=returncode, wall_seconds=time.monotonic() - start)


@dataclass
class Streams:
    """What ``read_streams`` read, and why it stopped."""

    out: bytes  # the runner's result stream, at most ``cap`` bytes
    err: bytes  # the sandbox's own stderr, at most SANDBOX_STDERR_CAP bytes
    timed_out: bool = False
    overflow: bool = False  # the result stream passed ``cap``
    oom: bool = False  # the run's cgroup ran out of memory
    cpu_exceeded: bool = False  # the run's processes together used up its CPU time

    def raw(self, returncode: int | None, wall_seconds: float) -> RawRun:
        return RawRun(
            stdout=self.out,
            stderr=self.err,
            returncode=returncode,
            wall_seconds=wall_seconds,
            timed_out=self.timed_out,
            stream_overflow=self.overflow,
            oom_killed=self.oom,
            cpu_exceeded=self.cpu_exceeded,
        )


def read_streams(
    out_fd: int,
    err_fd: int,
    *,
    deadline: float,
    cap: int,
    oom_fd: int | None = None,
    cpu: CpuBudget | None = None,
) -> Streams:
    """Read a run's result stream (``out_fd``) and its sandbox's stderr until the runner's last
    frame has arrived or both are closed, or until the wall clock's ``deadline``, more than
    ``cap`` result bytes, a notice on ``oom_fd`` (the run cgroup's ``oom_watch``) or the end of
    its ``cpu`` budget: from then on nothing the run does is graded. The caller ends the run.
    A run that shared the machine and still computes at the deadline gets until ``WALL_GRACE``
    times its wall clock (``CpuBudget.grace``)."""
    # Counted among the runs sharing the machine while it is watched (``CpuBudget.grace``).
    with cpu.watching() if cpu is not None else contextlib.nullcontext():
        out = bytearray()
        err = bytearray()
        streams = Streams(b"", b"")
        frames = EndFrameScanner()
        open_fds = {out_fd, err_fd}
        poller = select.poll()
        for fd in (*open_fds, *([oom_fd] if oom_fd is not None else [])):
            poller.register(fd, select.POLLIN)
        while open_fds and not frames.ended and not streams.oom and not streams.overflow:
            if cpu is not None and cpu.due_and_exceeded():
                streams.cpu_exceeded = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                later = cpu.grace(deadline) if cpu is not None else None
                if later is None:
                    streams.timed_out = True
                    break
                deadline = later
                continue
            for fd, _ in poller.poll((cpu.timeout(remaining) if cpu else remaining) * 1000):
                if fd == oom_fd:
                    streams.oom = True
                    break
                try:
                    chunk = os.read(fd, 1 << 16)
                except ConnectionResetError:  # it died with its job unread: as good as closed
                    chunk = b""
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                elif fd == out_fd:
                    out += chunk
                    streams.overflow = len(out) > cap
                    frames.scan(out)
                elif len(err) < SANDBOX_STDERR_CAP:
                    err += chunk[: SANDBOX_STDERR_CAP - len(err)]
        streams.out, streams.err = bytes(out[:cap]), bytes(err)
        # A run that ended between two readings may still have gone past its budget.
        if cpu is not None and not streams.cpu_exceeded and cpu.exceeded():
            streams.cpu_exceeded = True
        return streams


def _feed(proc: subprocess.Popen[bytes], job: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.write(job)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


_SIGNAL_MEANING: dict[int, str] = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGABRT: "aborted",
    signal.SIGFPE: "floating-point exception",
    signal.SIGILL: "illegal instruction",
    signal.SIGXFSZ: "file size limit exceeded",
    signal.SIGSYS: "forbidden system call",
}


def interpret(raw: RawRun, request: RunRequest, backend: str) -> RunResult:
    """Map what happened to a ``RunResult``. Expected outputs are not involved."""
    limits = request.limits
    parsed = parse_stream(raw.stdout, request)
    result = RunResult(status="ok", cases=parsed.cases, backend=backend)
    result.wall_seconds = raw.wall_seconds
    end = parsed.end
    result.import_stdout, result.import_stderr = parsed.import_stdout, parsed.import_stderr
    result.unfinished_stdout = parsed.unfinished_stdout
    result.unfinished_stderr = parsed.unfinished_stderr
    if end is not None:
        result.stdout, result.stderr = end.stdout, end.stderr
        result.stdout_truncated = end.stdout_bytes > limits.output_bytes
        result.stderr_truncated = end.stderr_bytes > limits.output_bytes
    else:
        # Killed from outside: what the output frames carried (public phases only).
        result.stdout = "".join(p.stdout for p in parsed.progress)
        result.stderr = "".join(p.stderr for p in parsed.progress)

    def fail(status: str, message: str) -> RunResult:
        result.status = status  # type: ignore[assignment]
        result.message = message
        return result

    if raw.launch_error:
        return fail("internal_error", raw.launch_error)
    if raw.oom_killed:  # before the clock: a run whose memory ran out often hangs after
        return fail("memory_limit_exceeded", f"memory limit of {limits.memory_mb} MiB exceeded")
    if raw.cpu_exceeded:
        return fail(
            "time_limit_exceeded",
            f"CPU limit of {limits.cpu_seconds:g} s exceeded (all processes of the run together)",
        )
    if raw.timed_out:
        return fail(
            "time_limit_exceeded", f"wall-clock limit of {limits.wall_seconds:g} s exceeded"
        )
    if raw.stream_overflow or (end is not None and end.result_overflow):
        return fail(
            "output_limit_exceeded",
            f"returned arrays exceed the limit of {limits.result_bytes} bytes",
        )
    if not parsed.started:
        detail = raw.stderr.decode("utf-8", "replace").strip()[-2000:] or parsed.problem
        return fail(
            "internal_error",
            f"the sandbox did not start (exit status {raw.returncode}): {detail}",
        )
    if end is None:
        if parsed.problem:
            return fail("runtime_error", parsed.problem)
        return fail(
            "runtime_error",
            "the sandbox exited before reporting (the submission may have killed its supervisor)",
        )
    if end.output_killed:
        return fail(
            "output_limit_exceeded",
            f"printed more than {limits.output_bytes * OUTPUT_KILL_FACTOR} bytes "
            "to stdout or stderr",
        )
    if parsed.load_failed is not None:
        err = parsed.load_failed.error
        result.load_error = CaseError(**err.model_dump())
        text = err.traceback or f"{err.type}: {err.message}"
        if parsed.load_failed.kind == "memory":
            return fail(
                "memory_limit_exceeded", f"MemoryError while importing the submission\n{text}"
            )
        if parsed.load_failed.kind == "compile":
            return fail("compile_error", text)
        return fail("runtime_error", f"the submission raised while being imported\n{text}")
    # Which exit code or signal ended the worker is the submission's choice: once it holds a
    # hidden case's inputs, naming it would show the student a byte of them.
    hidden = _in_hidden_phase(len(parsed.cases), request)
    if end.worker_signal is not None:
        sig = end.worker_signal
        cpu_hit = end.worker_cpu_seconds >= limits.cpu_seconds * 0.95
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_hit):
            return fail("time_limit_exceeded", f"CPU limit of {limits.cpu_seconds:g} s exceeded")
        if hidden:
            return fail("runtime_error", f"the submission was killed by a signal {HIDDEN_PHASE}")
        meaning = _SIGNAL_MEANING.get(sig, "")
        suffix = f" ({meaning})" if meaning else ""
        return fail("runtime_error", f"the submission was killed by {_signal_name(sig)}{suffix}")
    if any(c.error is not None and c.error.type == "MemoryError" for c in parsed.cases):
        return fail("memory_limit_exceeded", f"memory limit of {limits.memory_mb} MiB exceeded")
    if not end.completed or len(parsed.cases) != len(request.cases):
        code = HIDDEN_PHASE if hidden else f"(code {end.worker_exit})"
        return fail("runtime_error", f"the submission exited {code} before reporting every case")
    return result


HIDDEN_PHASE = "during a hidden test"


def _in_hidden_phase(reported: int, request: RunRequest) -> bool:
    """Whether a worker that reported ``reported`` cases (in order) had reached a hidden one."""
    return any(case.hidden for case in request.cases[: reported + 1])


__all__ = [
    "LAUNCHER_TASKS",
    "CpuBudget",
    "Launched",
    "ParsedStream",
    "RawRun",
    "apply_rlimits",
    "collect",
    "interpret",
    "kill_launched",
    "launch",
    "rlimits",
    "run_command",
]
