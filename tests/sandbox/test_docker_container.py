"""Docker-specific behaviour: the container as a submission sees it from inside, the limits the
engine enforces, and that no container outlives its run, whatever happened in it.

The attacks shared with the bwrap backend live in the backend-parametrized attack tests; these are
the properties only the docker backend has (engine flags, container lifecycle, image checks).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sandbox.backends import docker as docker_backend
from sandbox.backends.common import BLAS_KERNEL_VARIABLES
from sandbox.backends.docker import (
    DEADLINE_LABEL,
    LABEL,
    DockerSandbox,
    DockerUnavailableError,
    StaleImageError,
)
from sandbox.backends.runtime import INSIDE_MOUNT, INSIDE_PACKAGE
from sandbox.protocol import CaseArgs, Limits, RunRequest, RunResult
from tests.sandbox.docker_support import docker_sandbox_or_skip

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sb() -> DockerSandbox:
    return docker_sandbox_or_skip()


@pytest.fixture(autouse=True)
def no_leftover_containers(sb: DockerSandbox) -> Iterator[None]:
    """Every test ends with none of its sandbox's containers left on the engine."""
    yield
    assert sb.leftovers() == []


def request(code: str, **limits: Any) -> RunRequest:
    return RunRequest(
        code=code,
        function_name="f",
        param_names=["x"],
        cases=[CaseArgs(name="c0", args={"x": np.arange(6.0)})],
        limits=Limits(**{"wall_seconds": 20.0, **limits}),
    )


def report(result: RunResult) -> dict[str, Any]:
    """The JSON a probing submission printed as its last stdout line."""
    assert result.status == "ok", (result.status, result.message, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


PROBE_IDENTITY = r"""
import ctypes, json, os, socket
def interfaces():
    try:
        return [n for _, n in socket.if_nameindex()]
    except OSError:  # listing interfaces takes a netlink socket, which seccomp refuses
        return "refused"
def f(x):
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    libc = ctypes.CDLL(None, use_errno=True)
    ptrace_parent = libc.ptrace(16, os.getppid(), 0, 0)  # PTRACE_ATTACH to the supervisor
    ptrace_errno = ctypes.get_errno()
    try:
        open(f"/proc/{os.getppid()}/mem", "rb").read(1)
        parent_mem = "read"
    except OSError as exc:
        parent_mem = type(exc).__name__
    mounts = {l.split()[1]: l.split()[3] for l in open("/proc/mounts")}
    limits = {l[:26].strip(): l[26:].split()[:2] for l in open("/proc/self/limits").readlines()[1:]}
    print(json.dumps({
        "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
        "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
        "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
        "env": dict(os.environ), "interfaces": interfaces(),
        "ptrace_parent": [ptrace_parent, ptrace_errno], "parent_mem": parent_mem,
        "mounts": mounts, "limits": limits, "shm": os.path.exists("/dev/shm"),
        "sys": os.listdir("/sys"),
        "programs": [p for p in ("/bin/sh", "/usr/bin/env", "/bin/ls", "/usr/bin/python3")
                     if os.path.exists(p)],
    }))
    return x
"""


def test_a_submission_runs_unprivileged_with_nothing_of_the_host(
    sb: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRADER_CANARY_SECRET", "canary-7f3a9c")
    result = sb.run(request(PROBE_IDENTITY, memory_mb=256, max_processes=32, file_bytes=1 << 20))
    seen = report(result)
    assert "canary-7f3a9c" not in json.dumps(seen)
    # A host uid of the run's own (the container has no user namespace), never root's.
    assert seen["uid"] == seen["gid"] and 200_000 < seen["uid"] < 200_000 + 65536, seen["uid"]
    assert int(seen["cap_eff"], 16) == 0 and int(seen["cap_bnd"], 16) == 0
    assert seen["no_new_privs"] == "1"
    assert seen["seccomp"] == "2"  # a filter is loaded
    assert not any(k.startswith(("GRADER_", "DOCKER_")) for k in seen["env"])
    assert set(seen["env"]) <= {
        "PATH",
        "HOSTNAME",
        "HOME",
        "PYTHONDONTWRITEBYTECODE",
        "LC_CTYPE",
        "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "TENSORJUDGE_RUN",  # a random run id, so the host can find the run's processes
        *BLAS_KERNEL_VARIABLES,  # where the host sets them: the same kernel inside as outside
    }
    assert seen["interfaces"] in (["lo"], "refused")
    # The worker can neither trace nor read its supervisor (the result stream's writer).
    assert seen["ptrace_parent"] == [-1, 1]  # EPERM
    assert seen["parent_mem"] == "PermissionError"
    assert seen["mounts"]["/"].startswith("ro,")
    tmp_options = seen["mounts"]["/tmp"].split(",")
    assert {"noexec", "nosuid", "nodev", "size=16384k"} <= set(tmp_options)
    assert seen["shm"] is False
    assert seen["sys"] == []  # the host's sysfs is hidden
    assert seen["programs"] == []  # the image is the interpreter, numpy and the runner only
    limits = seen["limits"]
    assert limits["Max cpu time"] == ["5", "6"]
    assert limits["Max file size"] == [str(1 << 20)] * 2
    assert limits["Max core file size"] == ["0", "0"]
    assert limits["Max open files"] == ["64", "64"]
    assert limits["Max data size"] == [str(256 << 20)] * 2


def test_the_engine_is_given_every_limit(sb: DockerSandbox) -> None:
    limits = Limits(memory_mb=300, max_processes=20, tmpfs_mb=8, cpu_seconds=2.5)
    created = sb.client.containers.create(
        sb.image, labels={LABEL: "1"}, **docker_backend.container_options(limits)
    )
    try:
        host = created.attrs["HostConfig"]
        config = created.attrs["Config"]
    finally:
        created.remove(force=True)
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert any(opt.startswith("seccomp=") for opt in host["SecurityOpt"])
    assert host["Memory"] == host["MemorySwap"] == 300 * 1024 * 1024
    assert host["PidsLimit"] == 20 + 1  # and the supervisor
    assert host["NanoCpus"] == 1_000_000_000
    assert host["IpcMode"] == "none"
    assert host["LogConfig"]["Type"] == "none"
    assert host["Tmpfs"]["/tmp"].startswith("rw,noexec,nosuid,nodev,size=8m")
    assert host["Tmpfs"]["/sys"].startswith("ro,")
    assert host["CgroupnsMode"] == "private"
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]}
    assert ulimits["cpu"] == (3, 4)
    assert ulimits["core"] == (0, 0)
    assert config["User"] == "10001:10001"
    assert config["Env"] is None or all(not e.startswith("GRADER_") for e in config["Env"])


PROBE_NETWORK = r"""
import json, socket
def attempt(fn):
    try:
        fn()
        return "connected"
    except OSError as exc:
        return type(exc).__name__
def f(x):
    port = int(x[0])
    out = {
        "loopback": attempt(lambda: socket.create_connection(("127.0.0.1", port), timeout=2)),
        "dns": attempt(lambda: socket.getaddrinfo("pypi.org", 443)),
    }
    print(json.dumps(out))
    return x
"""


def test_no_network_not_even_the_hosts_loopback(sb: DockerSandbox) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        req = RunRequest(
            code=PROBE_NETWORK,
            function_name="f",
            param_names=["x"],
            cases=[CaseArgs(name="c0", args={"x": np.array([float(port)])})],
        )
        seen = report(sb.run(req))
        # A connection that got through would wait in the backlog: there is none.
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()
    # Not even a socket can be made: the worker's own filter refuses every socket
    # (sandbox/inside/nochannels.py), under the sandbox's, which allows AF_UNIX only.
    assert seen["loopback"] == "PermissionError"
    assert seen["dns"] == "gaierror"


PROBE_FILESYSTEM = r"""
import json, os
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return type(exc).__name__ + ":" + str(exc.errno)
def write(path, size=1):
    with open(path, "wb") as fh:
        fh.write(b"x" * size)
def f(x):
    out = {name: attempt(lambda p=path: write(p)) for name, path in {
        "runner": "/opt/tensorjudge/inside/__main__.py", "etc": "/etc/tj-probe",
        "root": "/tj-probe", "venv": "/opt/venv/tj-probe",
        "runner_dir": "/opt/tensorjudge/inside/x", "dev": "/dev/tj-probe",
    }.items()}
    out["tmp_small"] = attempt(lambda: write("/tmp/small", 1 << 20))
    out["tmp_fill"] = attempt(lambda: write("/tmp/big", 24 << 20))
    os.remove("/tmp/big")
    with open("/tmp/run.sh", "w") as fh:
        fh.write("#!/bin/sh\necho escaped\n")
    os.chmod("/tmp/run.sh", 0o755)
    child = os.fork()
    if child == 0:
        try:
            os.execv("/tmp/run.sh", ["/tmp/run.sh"])
        except OSError as exc:
            os._exit(exc.errno)
        os._exit(0)
    out["exec_tmp"] = "PermissionError:" + str(os.waitpid(child, 0)[1] >> 8)
    print(json.dumps(out))
    return x
"""


def test_only_tmp_is_writable_and_it_is_capped_and_noexec(sb: DockerSandbox) -> None:
    # file_bytes above the tmpfs size, so the tmpfs cap is what stops the big write.
    seen = report(sb.run(request(PROBE_FILESYSTEM, tmpfs_mb=16, file_bytes=64 << 20)))
    for place in ("runner", "etc", "root", "venv", "runner_dir", "dev"):
        assert seen[place] in ("OSError:30", "PermissionError:13"), (place, seen[place])
    assert seen["tmp_small"] == "ok"
    assert seen["tmp_fill"] == "OSError:28"  # ENOSPC
    # EACCES: /tmp is noexec; EPERM: the worker's filter refuses every execve anyway.
    assert seen["exec_tmp"] in ("PermissionError:13", "PermissionError:1")


PROBE_PIDS = r"""
import json, os, time
def f(x):
    children, error = [], None
    for _ in range(500):
        try:
            pid = os.fork()
        except OSError as exc:
            error = type(exc).__name__
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    print(json.dumps({"forked": len(children), "error": error}))
    return x
"""


def test_processes_are_capped_per_container(sb: DockerSandbox) -> None:
    seen = report(sb.run(request(PROBE_PIDS, max_processes=16)))
    assert seen["error"] == "BlockingIOError"
    assert 8 <= seen["forked"] < 16  # the worker itself is one of the 16


GROW_SHARED = r"""
import os, time
def f(x):
    while True:  # each process under RLIMIT_DATA, together over the cgroup's limit (a run
        if os.fork() == 0:  # can make no shared memory: nochannels.py)
            block = b"\1" * (48 << 20)
            time.sleep(30)
            os._exit(0)
        time.sleep(0.05)
"""

HUGE_ALLOCATION = """
import numpy as np
def f(x):
    return np.ones((1 << 30,), dtype=np.uint8)  # 1 GiB
"""


def test_gradual_growth_is_an_oom_kill_of_the_container(sb: DockerSandbox) -> None:
    raw = sb.execute(request(GROW_SHARED, memory_mb=128))
    assert raw.oom_killed
    result = sb.run(request(GROW_SHARED, memory_mb=128))
    assert result.status == "memory_limit_exceeded", result.message


def test_one_huge_allocation_is_a_memory_error(sb: DockerSandbox) -> None:
    result = sb.run(request(HUGE_ALLOCATION, memory_mb=128))
    assert result.status == "memory_limit_exceeded", result.message


@pytest.mark.parametrize(
    ("code", "limits", "status"),
    [
        ("def f(x):\n    return x * 2\n", {}, "ok"),
        (
            "import time\ndef f(x):\n    time.sleep(600)\n",
            {"wall_seconds": 2.0},
            "time_limit_exceeded",
        ),
        ("def f(x):\n    while True:\n        pass\n", {"cpu_seconds": 1.0}, "time_limit_exceeded"),
        ("import os\nos._exit(3)\n", {}, "runtime_error"),
        ("import ctypes\ndef f(x):\n    ctypes.string_at(0)\n", {}, "runtime_error"),
        ("def f(x:\n", {}, "compile_error"),
    ],
    ids=["ok", "sleep", "spin", "exit-at-import", "segfault", "syntax"],
)
def test_the_container_is_removed_however_the_run_ends(
    sb: DockerSandbox, code: str, limits: dict[str, float], status: str
) -> None:
    result = sb.run(request(code, **limits))
    assert result.status == status, result.message
    assert result.backend == "docker"
    # no_leftover_containers checks the engine afterwards.


def test_a_wall_clock_kill_ends_every_process_in_the_container(sb: DockerSandbox) -> None:
    code = (
        "import os, time\n"
        "def f(x):\n"
        "    for _ in range(4):\n"
        "        if os.fork() == 0:\n"
        "            try:\n"
        "                os.setsid()\n"
        "            except OSError:\n"  # refused by the worker's filter
        "                pass\n"
        "            while True:\n"
        "                time.sleep(1)\n"
        "    time.sleep(600)\n"
    )
    result = sb.run(request(code, wall_seconds=2.0))
    assert result.status == "time_limit_exceeded"
    # From the runner's start (not the container's creation) to every process gone.
    assert result.wall_seconds < 2.0 + 5, result.wall_seconds


def test_the_container_is_removed_when_the_host_side_fails_mid_run(
    sb: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def host_failure(*args: object) -> None:
        raise RuntimeError("host side failed while the container ran")

    monkeypatch.setattr(docker_backend, "_exchange", host_failure)
    with pytest.raises(RuntimeError, match="host side failed"):
        sb.run(request("import time\ndef f(x):\n    time.sleep(600)\n"))


def test_concurrent_runs_each_get_their_own_container(sb: DockerSandbox) -> None:
    results: list[RunResult] = []
    code = "import numpy as np\ndef f(x):\n    return x + {n}\n"

    def one(n: int) -> None:
        results.append(sb.run(request(code.format(n=n))))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outputs = sorted(float(r.cases[0].output[0]) for r in results if r.cases[0].output is not None)
    assert [r.status for r in results] == ["ok"] * 3
    assert outputs == [0.0, 1.0, 2.0]


def test_prune_removes_containers_a_dead_host_process_left(sb: DockerSandbox) -> None:
    past = str(int(time.time()) - 3600)
    orphan = sb.client.containers.create(
        sb.image, labels={LABEL: "1", DEADLINE_LABEL: past}, command=[]
    )
    assert sb.prune() >= 1
    with pytest.raises(Exception, match=r"No such container|404"):
        orphan.reload()


def test_a_running_sandbox_sweeps_orphans_between_runs(sb: DockerSandbox) -> None:
    # A worker restarted after a crash keeps one sandbox for its life: the crashed one's
    # containers must go while it runs, not only when a sandbox is created.
    past = str(int(time.time()) - 3600)
    orphan = sb.client.containers.create(
        sb.image, labels={LABEL: "1", DEADLINE_LABEL: past}, command=[]
    )
    sb._next_prune = 0.0  # as if the sweep interval had passed
    assert sb.run(request("def f(x):\n    return x\n")).status == "ok"
    with pytest.raises(Exception, match=r"No such container|404"):
        orphan.reload()


def test_a_missing_image_is_reported_not_run() -> None:
    with pytest.raises(DockerUnavailableError, match="missing"):
        DockerSandbox(image="tensorjudge/no-such-image:never")


@pytest.mark.parametrize("module", ["worker.py", "extra.py"], ids=["changed", "added"])
def test_an_image_with_another_runner_is_refused(
    sb: DockerSandbox, tmp_path: Path, module: str
) -> None:
    """Any module of the in-sandbox package counts, not only the entry point's."""
    source = INSIDE_PACKAGE / module
    (tmp_path / module).write_text(
        (source.read_text() if source.exists() else "") + "\n# another version\n"
    )
    (tmp_path / "Dockerfile").write_text(
        f"FROM {sb.image}\nCOPY {module} {INSIDE_MOUNT}/{module}\n"
    )
    tag = "tensorjudge/sandbox-stale-test:latest"
    sb.client.images.build(path=str(tmp_path), tag=tag, rm=True)
    try:
        with pytest.raises(StaleImageError, match="differs"):
            DockerSandbox(image=tag)
    finally:
        sb.client.images.remove(tag, force=True)


def _mux(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(payload)) + payload


def test_the_attach_stream_is_demultiplexed_capped_and_timed() -> None:
    """The engine's framing, over a real socket pair standing in for the attach connection."""
    ours, engine = socket.socketpair()
    with ours, engine:
        job = b"J" * 200_000  # more than one send: the job goes out while output comes in
        received = bytearray()

        def serve() -> None:
            while chunk := engine.recv(1 << 16):  # until our side shuts down writing
                received.extend(chunk)
            engine.sendall(_mux(1, b"res") + _mux(2, b"diag") + _mux(1, b"ult"))
            engine.shutdown(socket.SHUT_WR)

        server = threading.Thread(target=serve)
        server.start()
        raw = docker_backend._exchange(ours, job, cap=1000, deadline=time.monotonic() + 10)
        server.join()
    assert bytes(received) == job
    assert (raw.stdout, raw.stderr) == (b"result", b"diag")
    assert not raw.timed_out and not raw.stream_overflow

    ours, engine = socket.socketpair()
    with ours, engine:
        engine.sendall(_mux(1, b"x" * 600) + _mux(1, b"x" * 600))
        raw = docker_backend._exchange(ours, b"", cap=1000, deadline=time.monotonic() + 10)
    assert raw.stream_overflow and not raw.timed_out

    ours, engine = socket.socketpair()
    with ours, engine:
        started = time.monotonic()
        raw = docker_backend._exchange(ours, b"", cap=1000, deadline=started + 0.5)
    assert raw.timed_out and 0.5 <= time.monotonic() - started < 5
