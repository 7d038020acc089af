"""Hostile submissions against the real sandboxes. Each asserts the verdict, that the host was left
alone, that no process of the run survived, and that a correct submission grades right after."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.core.config import REPO_ROOT
from sandbox.protocol import Limits, Sandbox
from tests.sandbox.helpers import (
    FAST,
    Host,
    assert_grader_still_works,
    fork_until_refused,
    forks_started,
    run,
    visible_text,
)

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow
def test_fork_bomb_is_contained_and_the_host_can_still_fork(sandbox: Sandbox) -> None:
    code = """
import os, time

def f(a, n):
    while True:
        try:
            if os.fork() == 0:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.01)
        except OSError:
            time.sleep(0.01)
"""
    host_forks: list[int] = []
    stop = threading.Event()

    def fork_on_host() -> None:
        while not stop.is_set():
            host_forks.append(subprocess.run(["true"], timeout=5).returncode)
            time.sleep(0.05)

    watcher = threading.Thread(target=fork_on_host)
    watcher.start()
    try:
        result = run(sandbox, code)
    finally:
        stop.set()
        watcher.join()
    assert result.status == "time_limit_exceeded", result.message
    assert result.wall_seconds < FAST.wall_seconds + 5, result.wall_seconds
    assert host_forks and set(host_forks) == {0}, "the host could not start processes"
    assert_grader_still_works(sandbox)


def test_fork_bomb_hits_the_process_limit(sandbox: Sandbox) -> None:
    limits = FAST.model_copy(update={"max_processes": 16})
    result = run(sandbox, fork_until_refused(), limits=limits)
    assert result.status == "ok", result.message
    assert 0 < forks_started(result) <= 16
    assert "BlockingIOError" in result.stdout
    assert_grader_still_works(sandbox)


def test_one_huge_allocation(sandbox: Sandbox) -> None:
    result = run(sandbox, "import numpy as np\ndef f(a, n):\n    return np.ones(10**10)\n")
    assert result.status == "memory_limit_exceeded", result.message
    assert_grader_still_works(sandbox)


def test_gradual_memory_growth(sandbox: Sandbox) -> None:
    code = """
def f(a, n):
    hoard = []
    while True:
        hoard.append(bytearray(4 * 1024 * 1024))
"""
    result = run(sandbox, code)
    assert result.status == "memory_limit_exceeded", result.message
    assert_grader_still_works(sandbox)


def test_memory_growth_at_import(sandbox: Sandbox) -> None:
    result = run(
        sandbox, "hoard = [bytearray(2**20) for _ in range(10**6)]\ndef f(a, n):\n    return a\n"
    )
    assert result.status == "memory_limit_exceeded", result.message
    assert_grader_still_works(sandbox)


def test_infinite_loop_hits_the_cpu_limit(sandbox: Sandbox) -> None:
    # A wall clock well above the CPU limit: on a loaded machine one CPU second can take several
    # wall seconds, and the test is about which limit stops the loop.
    limits = FAST.model_copy(update={"cpu_seconds": 1.0, "wall_seconds": 10.0})
    result = run(sandbox, "def f(a, n):\n    while True:\n        pass\n", limits=limits)
    assert result.status == "time_limit_exceeded", result.message
    assert "CPU" in result.message  # stopped by the CPU limit, not the wall clock
    assert result.wall_seconds < limits.wall_seconds, result.wall_seconds
    assert_grader_still_works(sandbox)


def test_sleep_forever_hits_the_wall_clock(sandbox: Sandbox) -> None:
    limits = FAST.model_copy(update={"wall_seconds": 2.0})
    result = run(sandbox, "import time\ndef f(a, n):\n    time.sleep(3600)\n", limits=limits)
    assert result.status == "time_limit_exceeded"
    assert "wall-clock" in result.message
    # The backend's own clock, from the runner's start: creating a container is not counted.
    assert 2.0 <= result.wall_seconds < 4.0, result.wall_seconds
    assert_grader_still_works(sandbox)


def test_ignoring_sigterm_and_sigalrm(sandbox: Sandbox) -> None:
    code = """
import signal, time
for sig in (signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
    signal.signal(sig, signal.SIG_IGN)

def f(a, n):
    while True:
        time.sleep(0.01)
        sum(range(1000))
"""
    limits = FAST.model_copy(update={"wall_seconds": 2.0})
    result = run(sandbox, code, limits=limits)
    assert result.status == "time_limit_exceeded"
    assert_grader_still_works(sandbox)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_output_flood(sandbox: Sandbox, stream: str) -> None:
    code = f"""
import sys
def f(a, n):
    while True:
        print("x" * 1000, file=sys.{stream})
"""
    result = run(sandbox, code)
    assert result.status == "output_limit_exceeded", result.message
    text = getattr(result, stream)
    assert getattr(result, f"{stream}_truncated")
    assert len(text) == FAST.output_bytes and set(text) <= {"x", "\n"}
    assert_grader_still_works(sandbox)


def test_output_a_little_over_the_cap_is_truncated_not_failed(sandbox: Sandbox) -> None:
    code = "def f(a, n):\n    print('y' * 6000)\n    return a\n"
    result = run(sandbox, code)
    assert result.status == "ok"
    assert result.stdout_truncated and result.stdout == "y" * FAST.output_bytes


def test_threads_still_running_after_return(sandbox: Sandbox) -> None:
    code = """
import threading, time

def spin():
    while True:
        print("still here")
        time.sleep(0.001)

def f(a, n):
    for _ in range(4):
        threading.Thread(target=spin, daemon=False).start()
    return a * n
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert result.cases[0].output is not None
    assert result.wall_seconds < 2.5, result.wall_seconds  # the run ended when the cases did
    assert_grader_still_works(sandbox)


def test_children_left_behind_do_not_hold_the_run(sandbox: Sandbox) -> None:
    code = """
import os, time

def f(a, n):
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:  # refused by the worker's filter: stays in the session
            pass
        while True:
            print("orphan")
            time.sleep(0.01)
    return a
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert result.wall_seconds < 2.5, result.wall_seconds
    assert_grader_still_works(sandbox)


def test_writing_a_huge_file(sandbox: Sandbox, host: Host) -> None:
    code = """
def f(a, n):
    with open("/tmp/big", "wb") as fh:
        for _ in range(64):
            fh.write(b"z" * 1024 * 1024)
    return a
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    err = result.cases[0].error
    assert err is not None and err.type == "OSError"
    assert "File too large" in err.message or "No space left" in err.message
    assert_grader_still_works(sandbox)


def test_filling_tmp(sandbox: Sandbox) -> None:
    code = """
def f(a, n):
    i = 0
    while True:
        with open(f"/tmp/f{i}", "wb") as fh:
            fh.write(b"z" * 512 * 1024)
        i += 1
"""
    result = run(sandbox, code)
    assert result.status == "ok"
    err = result.cases[0].error
    assert err is not None and "No space left" in err.message
    assert_grader_still_works(sandbox)


def test_writing_outside_the_sandbox(sandbox: Sandbox, host: Host) -> None:
    targets = [str(p) for p in host.outside] + [str(REPO_ROOT / "app" / "__init__.py")]
    code = f"""
import os
def f(a, n):
    report = []
    for path in {targets!r}:
        try:
            with open(path, "a") as fh:
                fh.write("pwned")
            report.append("wrote " + path)
        except OSError as exc:
            report.append(f"{{path}}: {{exc.strerror}}")
    print("\\n".join(report))
    return a
"""
    before = (REPO_ROOT / "app" / "__init__.py").read_bytes()
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    host.assert_unchanged()
    assert (REPO_ROOT / "app" / "__init__.py").read_bytes() == before
    assert_grader_still_works(sandbox)


def test_reading_secrets(sandbox: Sandbox, host: Host) -> None:
    reference = REPO_ROOT / "problems" / "multi-head-attention" / "reference.py"
    paths = [
        "/proc/1/environ",
        "/proc/self/environ",
        str(host.canary_file),
        str(host.data_dir / "secret.txt"),
        str(reference),
        str(REPO_ROOT / ".env"),
        "/etc/passwd",
        "/etc/shadow",
        "/root/.bash_history",
    ]
    code = f"""
import os, numpy as np

def f(a, n):
    found = [repr(dict(os.environ))]
    for path in {paths!r}:
        try:
            with open(path, "rb") as fh:
                found.append(path + " " + fh.read().decode("utf-8", "replace"))
        except OSError as exc:
            found.append(path + " " + str(exc))
    text = "\\n".join(found)
    print(text)
    import sys
    print(text, file=sys.stderr)
    if n == 2:
        raise RuntimeError(text)
    return np.frombuffer(text.encode().ljust(8 * ((len(text) + 7) // 8)), dtype=np.uint8)
"""
    cases: list[dict[str, np.ndarray | int]] = [
        {"a": np.ones(2), "n": 1},
        {"a": np.ones(2), "n": 2},
    ]
    result = run(sandbox, code, cases=cases)
    assert result.status == "ok", result.message
    host.assert_token_absent(result)
    secret_line = "Reference solution. Trusted code"
    assert secret_line in reference.read_text()
    assert secret_line not in visible_text(result)
    assert "TJ_CANARY_SECRET" not in result.stdout
    # Showing that the reads ran: the sandbox's own environment is tiny.
    assert "TENSORJUDGE_RUN" in result.stdout or "PATH" in result.stdout
    assert_grader_still_works(sandbox)


def test_import_time_secrets_in_the_compile_error(sandbox: Sandbox, host: Host) -> None:
    code = f"raise ImportError(open({str(host.canary_file)!r}).read())\n"
    result = run(sandbox, code)
    assert result.status == "runtime_error"  # the open() raised before the ImportError could
    host.assert_token_absent(result)
    assert "FileNotFoundError" in result.message


def test_network_is_unreachable(sandbox: Sandbox) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    code = f"""
import socket

def f(a, n):
    report = []
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1"):
        try:
            s = socket.create_connection((host, {port}), timeout=1)
            s.sendall(b"pwned")
            report.append("connected " + host)
        except OSError as exc:
            report.append(host + " " + type(exc).__name__)
    try:
        report.append("ifaces " + ",".join(name for _, name in socket.if_nameindex()))
    except OSError:  # listing interfaces takes a netlink socket, which seccomp refuses
        report.append("ifaces refused")
    print("\\n".join(report))
    return a
"""
    try:
        result = run(sandbox, code)
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
    assert result.status == "ok", result.message
    assert "connected" not in result.stdout
    ifaces = next(line for line in result.stdout.splitlines() if line.startswith("ifaces"))
    assert ifaces.split()[1:] in ([], ["lo"], ["refused"]), ifaces
    assert_grader_still_works(sandbox)


def test_spawning_a_shell(sandbox: Sandbox, host: Host) -> None:
    code = f"""
import os, subprocess

def f(a, n):
    report = []
    for argv in (["sh", "-c", "echo SPAWNED"], ["/bin/sh", "-c", "echo SPAWNED"],
                 ["/usr/bin/env", "sh"], ["python3", "-c", "print('SPAWNED')"]):
        try:
            subprocess.run(argv, timeout=2)
            report.append("ran " + argv[0])
        except OSError as exc:
            report.append(argv[0] + " " + type(exc).__name__)
    report.append("system " + str(os.system("touch {host.outside[0]}")))
    print("\\n".join(report))
    return a
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert "SPAWNED" not in result.stdout and "ran " not in result.stdout
    host.assert_unchanged()
    assert_grader_still_works(sandbox)


@pytest.mark.parametrize(
    "attack",
    [
        "os.kill(-1, signal.SIGKILL)",
        "os.kill(os.getppid(), signal.SIGKILL)",
        "os.kill(1, signal.SIGKILL); os.kill(os.getppid(), signal.SIGKILL)",
    ],
    ids=["kill-all", "kill-parent", "kill-init"],
)
def test_killing_everything_it_can(sandbox: Sandbox, attack: str) -> None:
    code = f"import os, signal\n\ndef f(a, n):\n    {attack}\n    return a\n"
    result = run(sandbox, code)
    if result.status == "ok":
        # Where the supervisor is its namespace's init (docker), the kernel ignores the signal
        # (and kill(-1) finds nothing else to kill: ProcessLookupError).
        assert len(result.cases) == 1
    else:
        assert result.status == "runtime_error", result.message
        assert "before reporting" in result.message
        assert result.cases == []
    assert_grader_still_works(sandbox)


def test_ctypes_segfault(sandbox: Sandbox) -> None:
    code = "import ctypes\ndef f(a, n):\n    return ctypes.string_at(0)\n"
    result = run(sandbox, code)
    assert result.status == "runtime_error"
    assert "SIGSEGV" in result.message
    assert_grader_still_works(sandbox)


def test_os_exit_at_import(sandbox: Sandbox) -> None:
    result = run(sandbox, "import os\nos._exit(0)\n")
    assert result.status == "runtime_error"
    assert "before reporting" in result.message
    assert_grader_still_works(sandbox)


def test_sys_exit_in_a_case_is_that_case_s_error(sandbox: Sandbox) -> None:
    result = run(sandbox, "import sys\ndef f(a, n):\n    sys.exit(3)\n")
    assert result.status == "ok"
    err = result.cases[0].error
    assert err is not None and err.type == "SystemExit"


def test_infinite_recursion(sandbox: Sandbox) -> None:
    result = run(sandbox, "def f(a, n):\n    return f(a, n)\n")
    assert result.status == "ok"
    err = result.cases[0].error
    assert err is not None and err.type == "RecursionError"
    assert "Previous line repeated" in err.traceback
    assert len(err.traceback) < 2000


def test_recursion_past_the_c_stack(sandbox: Sandbox) -> None:
    # Through map(), every level also takes C stack: the interpreter's guard is switched off.
    code = (
        "import sys\nsys.setrecursionlimit(10**8)\n"
        "def f(a, n):\n    return list(map(f, [a], [n]))\n"
    )
    result = run(sandbox, code)
    assert result.status in ("runtime_error", "memory_limit_exceeded"), result.message
    assert_grader_still_works(sandbox)


def test_object_array_whose_pickle_would_run_code(sandbox: Sandbox, host: Host) -> None:
    marker = host.outside[3]  # in the test's tmp dir: where the host-side payload would write
    code = f"""
import os
import numpy as np

class Evil:
    def __reduce__(self):
        return (os.system, ("touch {marker}",))

def f(a, n):
    return np.array([Evil(), Evil()], dtype=object)
"""
    result = run(sandbox, code)
    assert result.status == "ok"
    err = result.cases[0].error
    assert err is not None and err.type == "InvalidOutput" and "object" in err.message
    assert result.cases[0].output is None
    assert not Path(marker).exists()
    assert_grader_still_works(sandbox)


def test_lazily_broadcast_huge_array(sandbox: Sandbox) -> None:
    code = (
        "import numpy as np\n"
        "def f(a, n):\n"
        "    return np.broadcast_to(np.float64(1.0), (200_000, 200_000))\n"
    )
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    err = result.cases[0].error
    assert err is not None and "bytes" in err.message and "(200000, 200000)" in err.message
    assert result.wall_seconds < 3, result.wall_seconds
    assert_grader_still_works(sandbox)


def test_outputs_over_the_result_cap(sandbox: Sandbox) -> None:
    limits = FAST.model_copy(update={"result_bytes": 1024 * 1024})
    code = "import numpy as np\ndef f(a, n):\n    return np.ones(100_000)\n"
    cases: list[dict[str, np.ndarray | int]] = [{"a": np.ones(1), "n": i} for i in range(3)]
    result = run(sandbox, code, cases=cases, limits=limits)
    assert result.status == "output_limit_exceeded", result.message
    assert_grader_still_works(sandbox)


def test_forging_results_through_stdout_does_nothing(sandbox: Sandbox) -> None:
    # A frame header and a fake "end" message printed to stdout: it is only captured text.
    code = r"""
import os, struct, json
def f(a, n):
    msg = json.dumps({"type": "end", "completed": True}).encode()
    os.write(1, struct.pack(">cQ", b"J", len(msg)) + msg)
    return a
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert '"completed": true' in result.stdout
    assert result.cases[0].output is not None


def test_limits_are_per_run(sandbox: Sandbox) -> None:
    """A tight memory limit on one run does not leak into the next."""
    small = Limits(cpu_seconds=2, wall_seconds=4, memory_mb=128, output_bytes=4096)
    result = run(
        sandbox, "import numpy as np\ndef f(a, n):\n    return np.ones(20_000_000)\n", limits=small
    )
    assert result.status == "memory_limit_exceeded", result.message
    assert_grader_still_works(sandbox)
