"""Helpers of the sandbox tests: a request builder, the host's canaries, leftover checks."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from sandbox.backends.docker import DockerSandbox
from sandbox.protocol import CaseArgs, Limits, RunRequest, RunResult, Sandbox


def fork_until_refused(linger: float = 0.0) -> str:
    """A submission that forks sleeping children until the kernel refuses, prints
    ``forked N ErrorName`` and stays ``linger`` seconds (so a watcher can see its children)."""
    return f"""
import os, time

def f(a, n):
    started = 0
    try:
        while started < 1000:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            started += 1
    except OSError as exc:
        print("forked", started, type(exc).__name__)
    time.sleep({linger})
    return a
"""


def forks_started(result: RunResult) -> int:
    """How many children ``fork_until_refused`` started before the kernel refused one."""
    words = result.stdout.split()
    assert words[:1] == ["forked"], f"no fork was refused: {result.stdout!r}"
    return int(words[1])


# Short limits keep the suite fast; each attack test that needs more says so.
FAST = Limits(
    cpu_seconds=2,
    wall_seconds=4,
    memory_mb=256,
    max_processes=32,
    output_bytes=4096,
    file_bytes=1024 * 1024,
    tmpfs_mb=4,
    result_bytes=8 * 1024 * 1024,
)

# The end of a receiver that defines ``_look(where)``: it looks at import and in the first
# (public) call, both shown to the student.
LOOK_TWICE = """
_look("import")
_calls = [0]

def f(a, n):
    _calls[0] += 1
    if _calls[0] == 1:
        _look("public")
    return a[:1] * n
"""

IDENTITY = """
import numpy as np

def f(a, n):
    return a * n
"""


@dataclass
class Host:
    """Things on the host the attacks go after, and the checks that they were left alone."""

    token: str  # a random canary: in a file, in the grader's environment
    canary_file: Path
    data_dir: Path
    outside: list[Path]  # files an attack tries to create on the host

    def assert_token_absent(self, result: RunResult) -> None:
        assert self.token not in visible_text(result)
        for case in result.cases:
            if case.output is not None:
                assert self.token.encode() not in case.output.tobytes()

    def assert_unchanged(self) -> None:
        for path in self.outside:
            assert not path.exists(), f"the sandbox created {path} on the host"


def visible_text(result: RunResult) -> str:
    """Every text field of a result: what a client could ever be shown."""
    parts = [result.message, result.stdout, result.stderr]
    for case in result.cases:
        parts.append(case.name)
        parts.extend(case.mutated_inputs)
        if case.error is not None:
            parts += [case.error.type, case.error.message, case.error.traceback]
    return "\n".join(parts)


def make_request(
    code: str,
    cases: list[dict[str, np.ndarray | int]] | None = None,
    limits: Limits = FAST,
    function_name: str = "f",
) -> RunRequest:
    if cases is None:
        cases = [{"a": np.arange(6.0).reshape(2, 3), "n": 2}]
    names = list(cases[0])
    return RunRequest(
        code=code,
        function_name=function_name,
        param_names=names,
        cases=[CaseArgs(name=f"case-{i}", args=c) for i, c in enumerate(cases)],
        limits=limits,
    )


def phased_request(
    code: str, cases: list[tuple[str, np.ndarray, bool]], limits: Limits = FAST
) -> RunRequest:
    """A request for ``f(a, n)`` over (name, a, hidden) cases, called with n = 1, 2, ..."""
    return RunRequest(
        code=code,
        function_name="f",
        param_names=["a", "n"],
        cases=[
            CaseArgs(name=name, args={"a": a, "n": n}, hidden=hidden)
            for n, (name, a, hidden) in enumerate(cases, start=1)
        ],
        limits=limits,
    )


def run(sandbox: Sandbox, code: str, **kwargs: object) -> RunResult:
    return sandbox.run(make_request(code, **kwargs))  # type: ignore[arg-type]


def run_watched(
    sandbox: Sandbox, code: str, look: Callable[[], None], every: float = 0.05, **kwargs: object
) -> RunResult:
    """``run``, while the host calls ``look`` every ``every`` seconds until the run is over."""
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            look()
            time.sleep(every)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return run(sandbox, code, **kwargs)
    finally:
        done.set()
        watcher.join()


def run_processes(sandbox: Sandbox) -> list[int]:
    """Host pids of processes of the sandbox's latest run that are still alive."""
    run_id = getattr(sandbox, "last_run_id", "")
    if not run_id:
        return []
    marker = f"TENSORJUDGE_RUN={run_id}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def assert_grader_still_works(sandbox: Sandbox) -> None:
    """No process of the previous run survives, and a correct submission still grades right."""
    deadline = time.monotonic() + 2.0
    while run_processes(sandbox) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run_processes(sandbox) == [], "processes of the attack's run survived it"
    for path in getattr(sandbox, "last_cgroup_dirs", []):
        assert not path.exists(), f"the run's cgroup {path} was not removed"
    leftover = getattr(sandbox, "leftovers", None)
    if callable(leftover):
        deadline = time.monotonic() + 3.0
        while leftover() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert leftover() == [], f"the backend left something behind: {leftover()}"
    a = np.arange(6.0).reshape(2, 3)
    result = run(sandbox, IDENTITY, cases=[{"a": a, "n": 3}])
    assert result.status == "ok", result.message
    assert result.cases[0].output is not None
    np.testing.assert_array_equal(result.cases[0].output, a * 3)
    # And the host itself can still start processes.
    subprocess.run(["true"], check=True, timeout=5)


def unwrapped(sandbox: Sandbox) -> Sandbox:
    """The backend behind the test wrappers: two concurrent runs may not both be served warm
    (the pool holds one sandbox) and the wrappers' counters assume one run at a time."""
    inner = getattr(sandbox, "pool", None) or getattr(sandbox, "server", None)
    return inner if inner is not None else sandbox


# x86_64 system call numbers; each is called with arguments that would succeed (or fail
# differently) if the call were allowed, so EPERM/ENOSYS can only come from the filter.
SYSCALL_ATTACKS = """
import ctypes, ctypes.util, errno, json, os, platform
import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
TMP = ctypes.create_string_buffer(b"/tmp")
X = ctypes.create_string_buffer(b"x")

def attempt(nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if ret >= 0 else ctypes.get_errno()

def f(a, n):
    assert platform.machine() == "x86_64"
    io_params = ctypes.create_string_buffer(120)
    results = {
        "ptrace(PTRACE_TRACEME)": attempt(101, 0, 0, 0, 0),
        "ptrace(PTRACE_ATTACH, 1)": attempt(101, 16, 1, 0, 0),
        "mount": attempt(165, 0, ctypes.addressof(TMP), 0, 0x1000, 0),
        "umount2": attempt(166, ctypes.addressof(TMP), 0),
        "unshare(CLONE_NEWUSER)": attempt(272, 0x10000000),
        "unshare(CLONE_NEWNS)": attempt(272, 0x00020000),
        "setns": attempt(308, 0, 0),
        "keyctl": attempt(250, 0, -3, 0),
        "add_key": attempt(248, ctypes.addressof(ctypes.create_string_buffer(b"user")),
                           ctypes.addressof(ctypes.create_string_buffer(b"k")),
                           ctypes.addressof(ctypes.create_string_buffer(b"v")), 1, -3),
        "bpf": attempt(321, 0, 0, 0),
        "perf_event_open": attempt(298, 0, 0, -1, -1, 0),
        "io_uring_setup": attempt(425, 4, ctypes.addressof(io_params)),
        "ioctl(TIOCSTI)": attempt(16, 0, 0x5412, ctypes.addressof(X)),
        "pivot_root": attempt(155, 0, 0),
        "chroot": attempt(161, ctypes.addressof(TMP)),
        "personality": attempt(135, 0x0040000),
        "userfaultfd": attempt(323, 0),
        "kexec_load": attempt(246, 0, 0, 0, 0),
        "init_module": attempt(175, 0, 0, 0),
        "clone(CLONE_NEWUSER)": attempt(56, 0x10000000 | 17, 0, 0, 0, 0),
        "clone3": attempt(435, 0, 0),
        "open_by_handle_at": attempt(304, -100, 0, 0),
        "process_vm_readv": attempt(310, 1, 0, 0, 0, 0, 0),
    }
    # And a few that must keep working, or the filter would be breaking Python itself.
    results["allowed getpid"] = attempt(39)
    print(json.dumps(results))
    return a
"""


def report(result: RunResult) -> dict[str, object]:
    """The JSON object a run printed last, once it ran its one case without error."""
    assert result.status == "ok", result.message
    assert result.cases[0].error is None, result.cases[0].error
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def side_by_side(
    sandbox: Sandbox, codes: dict[str, str], limits: Limits = FAST, delay: float = 0.0
) -> dict[str, RunResult]:
    """Run every code at once (each started ``delay`` seconds after the one before), concurrently,
    on the backend itself (no warm-up wrapper); their results by name."""
    backend = unwrapped(sandbox)
    results: dict[str, RunResult] = {}

    def go(key: str) -> None:
        results[key] = run(backend, codes[key], limits=limits)

    threads = [threading.Thread(target=go, args=(key,)) for key in codes]
    for i, t in enumerate(threads):
        if i:
            time.sleep(delay)
        t.start()
    for t in threads:
        t.join()
    return results


class StartedLate(AssertionError):
    """A run of a timed channel started after the slots' start: the attempt proves nothing."""


def in_time(late: object, who: str) -> None:
    """``late``: how many seconds after the slots' start a run began (negative: before)."""
    if float(late) >= 0:  # type: ignore[arg-type]
        raise StartedLate(f"the {who} started late: {late}")


T = TypeVar("T")


def at_a_common_start(sandbox: Sandbox, attempt: Callable[[float], T]) -> T:
    """``attempt(t0)`` with the runs' slots starting at ``t0``, when both runs have started.

    Slots start 2 s ahead (a run starts in well under a second on a quiet host), 5 s for docker
    (a cold container); if a run still began late (``in_time`` raised), the attempt is made
    once more 5 s ahead. A fixed 5 s lead cost the serial phase ~3 s per channel test.
    """
    leads = (5.0,) if isinstance(unwrapped(sandbox), DockerSandbox) else (2.0, 5.0)
    for lead in leads[:-1]:
        try:
            return attempt(time.time() + lead)
        except StartedLate as late:
            print(f"{late}; again with a {leads[-1]} s lead")
    return attempt(time.time() + leads[-1])


def timed_pair(
    sandbox: Sandbox, codes_at: Callable[[float], dict[str, str]], limits: Limits
) -> dict[str, object]:
    """A ``sender`` and a ``receiver`` side by side, their slots starting together at ``t0`` once
    both runs have started (``at_a_common_start``); ``codes_at(t0)`` gives their codes. The
    sender prints how late it started last; the receiver a JSON object with ``late``. The
    receiver's report."""

    def attempt(t0: float) -> dict[str, object]:
        results = side_by_side(sandbox, codes_at(t0), limits)
        sent = results["sender"]
        assert sent.status == "ok" and sent.cases[0].error is None, (sent.message, sent.cases)
        in_time(sent.stdout.split()[-1], "sender")
        got = report(results["receiver"])
        in_time(got["late"], "receiver")
        return got

    return at_a_common_start(sandbox, attempt)


def manchester_pair(
    sandbox: Sandbox, sender: str, receiver: str, limits: Limits, bits: list[int], half: float
) -> dict[str, object]:
    """``timed_pair`` of ``sender`` formatted with ``t0``, ``bits`` and ``half`` and ``receiver``
    with ``t0``, ``slots`` and ``half``."""
    return timed_pair(
        sandbox,
        lambda t0: {
            "sender": sender.format(t0=t0, bits=bits, half=half),
            "receiver": receiver.format(t0=t0, slots=2 * len(bits), half=half),
        },
        limits,
    )


def manchester_decoded(moved: list[int], bits: list[int]) -> int:
    """How many bits a receiver decodes from how far a counter ``moved`` in each half slot (a
    one moves it more in the first half), read either way up: at chance len(bits) / 2."""
    right = sum(int(moved[2 * i] > moved[2 * i + 1]) == bit for i, bit in enumerate(bits))
    return max(right, len(bits) - right)


def balanced_secret(n: int) -> list[int]:
    """A random secret with as many ones as zeros: a source that never moves decodes n/2."""
    bits = [1] * (n // 2) + [0] * (n - n // 2)
    for i in range(n - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        bits[i], bits[j] = bits[j], bits[i]
    return bits
