"""The fork server: each submission is a fresh fork of a numpy-preloaded zygote in its own
namespaces, cgroup, rlimits and seccomp filter; nothing of one submission reaches the next, the
zygote or a concurrent run."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox, ZygoteGone
from sandbox.protocol import RunResult
from tests.sandbox.helpers import (
    FAST,
    IDENTITY,
    assert_grader_still_works,
    fork_until_refused,
    forks_started,
    run,
)

pytestmark = pytest.mark.timeout(120)

# Leaves traces everywhere a later submission could look (a file in /tmp and /dev/shm, a module
# global, numpy monkeypatched, an environment variable, a thread and a child process still
# running), then reports what it found of an earlier submission's traces.
TRACES = """
import os, sys, threading, time, numpy as np

def f(a, n):
    found = []
    for path in ("/tmp/trace", "/dev/shm/trace"):
        if os.path.exists(path):
            found.append(path)
        try:
            open(path, "w").write("x")
        except OSError:
            pass
    if getattr(sys, "_trace", None):
        found.append("module global")
    if np.array_equal is not np.core.numeric.array_equal or getattr(np, "_trace", None):
        found.append("numpy")
    if os.environ.get("TRACE"):
        found.append("env")
    if any(t.name == "trace" for t in threading.enumerate()):
        found.append("thread")
    procs = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    sys._trace = True
    np._trace = True
    np.array_equal = lambda *args, **kw: True
    os.environ["TRACE"] = "1"
    threading.Thread(target=time.sleep, args=(30,), name="trace", daemon=True).start()
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    print(json.dumps({"found": found, "procs": procs}))
    return a
""".replace("import os,", "import json, os,")


@pytest.fixture
def server(own_fork_server: ForkServerSandbox) -> ForkServerSandbox:
    return own_fork_server


def _forked(server: ForkServerSandbox, code: str, **kwargs: object) -> RunResult:
    before = server.forked_runs
    result = run(server, code, **kwargs)
    assert server.forked_runs == before + 1, "not served by the fork server"
    return result


def test_no_state_survives_from_one_submission_to_the_next(server: ForkServerSandbox) -> None:
    for _ in range(3):
        result = _forked(server, TRACES, limits=FAST)
        assert result.status == "ok", result.message
        report = json.loads(result.stdout)
        assert report["found"] == [], report
        # Its own pid namespace: the worker is its pid 2 (pid 1, the supervisor, is hidden from
        # it), nothing of the last run.
        assert report["procs"] == [2], report
        assert_grader_still_works(server)  # the thread and the forked sleeper are gone


def test_the_child_is_confined_before_it_runs_code(server: ForkServerSandbox) -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)

def f(a, n):
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    print(status["CapEff"].strip(), status["CapBnd"].strip(), status["NoNewPrivs"].strip(),
          status["Seccomp"].strip(), libc.unshare(0x10000000), ctypes.get_errno(),
          open("/proc/self/cgroup").read().replace("\\n", " "))
    for path in ("/proc/sys/kernel/hostname", "/proc/sysrq-trigger"):
        try:
            with open(path, "w") as fh:
                fh.write("x")
            print("WROTE", path)
        except OSError as exc:
            print(path, exc.errno)
    return a
"""
    result = _forked(server, code)
    assert result.status == "ok", result.message
    fields = result.stdout.split()
    assert fields[:6] == ["0000000000000000", "0000000000000000", "1", "2", "-1", "1"], fields
    # The child's own /proc holds its processes only: no /proc/sys, no sysrq-trigger to write.
    assert "WROTE" not in result.stdout, result.stdout
    assert "/proc/sys/kernel/hostname 2" in result.stdout, result.stdout  # ENOENT
    assert "/proc/sysrq-trigger 2" in result.stdout, result.stdout
    # The host moved the run into its own cgroup before releasing it.
    names = {d.name for d in server.last_cgroup_dirs}
    if names:
        assert any(name in result.stdout for name in names), result.stdout


def test_a_child_cannot_signal_the_zygote_or_a_concurrent_child(
    server: ForkServerSandbox,
) -> None:
    zygote = server.zygote_pid()
    sleeper = "import time\ndef f(a, n):\n    time.sleep(1.5)\n    return a * n\n"
    results: list[RunResult] = []
    t = threading.Thread(target=lambda: results.append(run(server, sleeper)))
    t.start()
    time.sleep(0.5)
    attacker = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)

def f(a, n):
    outcome = {}
    for pid in range(1, 4096):
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            outcome.setdefault("killed", []).append(pid)
        except OSError:
            pass
        if libc.ptrace(16, pid, 0, 0) == 0:
            outcome.setdefault("attached", []).append(pid)
    print(outcome)
    return a
"""
    result = run(server, attacker)
    t.join()
    assert server.forked_runs == 2 and server.cold_runs == 0
    # Only its own supervisor (pid 1 of its namespace) could even be named; nothing was attached.
    assert "attached" not in result.stdout
    assert results[0].status == "ok", results[0].message
    np.testing.assert_array_equal(results[0].cases[0].output, np.arange(6.0).reshape(2, 3) * 2)
    assert server.zygote_pid() == zygote
    assert server.zygote_starts == 1
    assert_grader_still_works(server)


def test_the_zygote_restarts_after_being_killed(server: ForkServerSandbox) -> None:
    zygote = server.zygote_pid()
    assert zygote is not None
    os.killpg(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while server._zygote is not None and server._zygote.alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    cold = server.cold_runs
    result = run(server, IDENTITY)
    assert result.status == "ok", result.message
    assert server.cold_runs == cold + 1  # no zygote: this run went the cold way
    assert server.wait_ready()
    assert server.zygote_pid() not in (None, zygote)
    result = _forked(server, IDENTITY)
    assert result.status == "ok", result.message
    assert server.zygote_starts == 2


# Sleeps a little in a process of its own session and in itself, then answers: graded "ok" when
# it is left to finish, whichever way it runs.
NAPPER = """
import os, time

def f(a, n):
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:  # refused by the worker's filter: stays in the session
            pass
        time.sleep(1.5)
        os._exit(0)
    time.sleep(1.5)
    return a * n
"""


def test_a_zygote_killed_mid_run_is_not_the_student_s_time_limit(
    server: ForkServerSandbox,
) -> None:
    """A zygote SIGKILLed under a run (an operator, the OOM killer) takes the whole run with it;
    the host sees its streams end at once and grades the submission cold, long before the
    run's wall limit, with a real verdict."""
    limits = FAST.model_copy(update={"wall_seconds": 30})
    cold, forked = server.cold_runs, server.forked_runs
    server.last_host_pid = 0
    results: list[RunResult] = []
    thread = threading.Thread(target=lambda: results.append(run(server, NAPPER, limits=limits)))
    thread.start()
    deadline = time.monotonic() + 10
    while not server.last_host_pid and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # the submission and its child are asleep by now
    zygote = server.zygote_pid()
    assert zygote is not None and server.last_host_pid
    killed = time.monotonic()
    os.kill(zygote, signal.SIGKILL)
    thread.join(limits.wall_seconds + 10)
    assert not thread.is_alive()
    # The cold run alone takes its 1.5 s nap; waiting for the wall limit would take 30 s.
    assert time.monotonic() - killed < 10
    result = results[0]
    assert result.status == "ok", (result.status, result.message)
    np.testing.assert_array_equal(result.cases[0].output, np.arange(6.0).reshape(2, 3) * 2)
    assert (server.cold_runs, server.forked_runs) == (cold + 1, forked)
    assert server.leftovers() == []  # nothing of the forked run outlived its zygote


def test_per_run_cgroup_limits_apply(server: ForkServerSandbox) -> None:
    if not server.inner.use_cgroup:
        pytest.skip("cgroups disabled")
    # Processes that each stay under RLIMIT_AS (the worker's is ~100 MiB, the limit 256 MiB) but
    # together pass the run's cgroup memory limit (320 MiB), then sleep far longer than a run
    # takes to start, so that ending early is the OOM notification's doing whatever the load.
    # The CPU limit leaves room too: CI once saw the notification come after 2 CPU s were spent.
    limits = FAST.model_copy(update={"cpu_seconds": 10.0, "wall_seconds": 30.0})
    code = """
import os, time, numpy as np
def f(a, n):
    for _ in range(4):
        if os.fork() == 0:
            kept = np.ones(120 * 2**20 // 8)
            time.sleep(20)
            os._exit(0)
    time.sleep(20)
    return a
"""
    result = _forked(server, code, limits=limits)
    assert result.status == "memory_limit_exceeded", (result.status, result.message)
    # Ended by the cgroup's OOM notification, not by the sleep or the wall clock.
    assert result.wall_seconds < 10, result.wall_seconds
    assert_grader_still_works(server)
    result = _forked(server, fork_until_refused(), limits=FAST)
    assert result.status == "ok", result.message
    assert 0 < forks_started(result) <= FAST.max_processes
    assert_grader_still_works(server)


def _running(pid: int) -> bool:
    """Alive, not merely an exited process its parent has yet to reap."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_for_spares(server: ForkServerSandbox, count: int) -> None:
    deadline = time.monotonic() + 10
    while server.spares_ready() < count:
        assert time.monotonic() < deadline, "the fork server primed no spare"
        time.sleep(0.01)


def test_a_spare_takes_the_limits_of_the_submission_it_serves(server: ForkServerSandbox) -> None:
    # Spares are primed with the latest request's limits: here a generous process limit...
    roomy = FAST.model_copy(update={"max_processes": 64})
    assert run(server, IDENTITY, limits=roomy).status == "ok"
    _wait_for_spares(server, server.spares)
    # ...then a submission with a tight one is served by such a spare. RLIMIT_NPROC cannot bound
    # a run whose uid is shared (see the README), so what stops the bomb is the spare's cgroup,
    # whose pids limit must have been lowered to this request's before the go-ahead.
    tight = FAST.model_copy(update={"max_processes": 6})
    spare_runs = server.spare_runs
    result = _forked(server, fork_until_refused(), limits=tight)
    assert server.spare_runs == spare_runs + 1, "not served by a spare"
    assert result.status == "ok", result.message
    assert 0 < forks_started(result) <= tight.max_processes, result.stdout
    assert_grader_still_works(server)


def test_spares_hold_nothing_of_earlier_submissions(server: ForkServerSandbox) -> None:
    """A spare is primed while other submissions run: it must still be a fresh fork."""
    for _ in range(3):
        _wait_for_spares(server, 1)
        spare_runs = server.spare_runs
        result = _forked(server, TRACES, limits=FAST)
        assert server.spare_runs == spare_runs + 1
        assert result.status == "ok", result.message
        assert json.loads(result.stdout) == {"found": [], "procs": [2]}


def test_a_run_primed_after_the_last_one_ended_is_not_its_leftover(
    server: ForkServerSandbox,
) -> None:
    """The kernel reuses a freed namespace's number for the next namespace made (seen here: a
    spare primed after a run had ended got the run's pid namespace number, and ``leftovers``,
    which every isolation test checks, counted the waiting spare as a survivor). The server keeps
    the latest run's namespace open until the next run, so its number stays taken."""
    assert _forked(server, IDENTITY, limits=FAST).status == "ok"
    deadline = time.monotonic() + 5.0
    while _alive(server.last_host_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server.last_host_pid), "the run did not end"
    time.sleep(0.3)  # a namespace is freed a little after its last process
    links = (_readlink_or_none(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd"))
    held = {link for link in links if link is not None}
    assert server.last_pidns in held, "the run's namespace was not kept: its number can be reused"
    later = [server._prime(FAST) for _ in range(3)]  # primed as a spare is, after the run
    try:
        assert server.last_pidns not in {p.pidns for p in later}
        assert server.leftovers() == []
    finally:
        for primed in later:
            primed.discard()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _readlink_or_none(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def test_spares_of_a_dead_zygote_are_never_used(server: ForkServerSandbox) -> None:
    _wait_for_spares(server, server.spares)
    zygote = server.zygote_pid()
    assert zygote is not None
    os.killpg(zygote, signal.SIGKILL)
    spare_runs = server.spare_runs
    # Whether the zygote is already back or not, the answer is right and comes from no old spare.
    result = run(server, IDENTITY)
    assert result.status == "ok", result.message
    np.testing.assert_array_equal(result.cases[0].output, np.arange(6.0).reshape(2, 3) * 2)
    assert server.spare_runs == spare_runs
    assert server.wait_ready()
    _wait_for_spares(server, 1)
    assert server.zygote_pid() not in (None, zygote)
    assert _forked(server, IDENTITY).status == "ok"
    assert server.spare_runs == spare_runs + 1


def test_closing_ends_the_spares(bwrap_sandbox: BwrapSandbox) -> None:
    server = ForkServerSandbox(bwrap_sandbox)
    _wait_for_spares(server, server.spares)
    pids = [p.pid for p in server._spare_pool]
    cgroups = [d for p in server._spare_pool if p.cg for d in p.cg.dirs.values()]
    server.close()
    for pid in pids:
        assert not _running(pid), f"spare {pid} survived close()"
    assert not any(d.exists() for d in cgroups), "a spare's cgroup survived close()"


def test_the_runner_s_end_frame_is_recognised() -> None:
    """The fork server stops reading at the runner's last frame instead of waiting for the
    namespace to be torn down; that relies on how the runner writes it."""
    import subprocess
    import sys

    from sandbox.backends.runtime import HOST_ENTRY
    from sandbox.wire import EndFrameScanner, encode_job
    from tests.sandbox.helpers import make_request

    job = encode_job(make_request(IDENTITY))
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(HOST_ENTRY), "--sys-path", np.__path__[0] + "/.."],
        input=job,
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout
    scanner = EndFrameScanner()
    scanner.scan(bytearray(out[:-1]))
    assert not scanner.ended  # not before the whole last frame is there
    scanner.scan(bytearray(out))
    assert scanner.ended and scanner.pos == len(out)


def test_when_runs_cannot_be_primed_submissions_still_run_and_priming_backs_off(
    bwrap_sandbox: BwrapSandbox,
) -> None:
    """E.g. a host that refuses to move runs into their cgroups: every attempt fails the same."""
    server = ForkServerSandbox(bwrap_sandbox)
    attempts: list[float] = []

    def refuse(limits: object) -> None:
        attempts.append(time.monotonic())
        raise ZygoteGone

    try:
        _wait_for_spares(server, server.spares)
        server._prime = refuse  # type: ignore[method-assign,assignment]
        for _ in range(server.spares):  # the spares primed before go first
            assert run(server, IDENTITY).status == "ok"
        cold = server.cold_runs
        result = run(server, IDENTITY)
        assert result.status == "ok", result.message
        assert server.cold_runs == cold + 1  # graded all the same, the cold way
        attempts.clear()
        time.sleep(2.0)
        # Backing off (0.1, 0.2, 0.4, 0.8 s...) rather than retrying in a tight loop.
        assert 1 <= len(attempts) <= 6, len(attempts)
        assert server.zygote_starts == 1  # a failed priming is not the zygote's death
    finally:
        server.close()
