"""The docker backend: one throwaway container per run, from the image of sandbox/Dockerfile.

The container gets no network, a read-only root, a small noexec tmpfs on /tmp, no capabilities,
no new privileges, no IPC namespace sharing or /dev/shm, an empty environment and a non-root
user; memory (= memory + swap), processes, CPU rate and rlimits are set by the engine, and the
wall clock is kept here: past it the container is killed, which ends its whole process tree.

Docker attach gives exactly three streams, so the job goes in on the runner's stdin and the result
stream comes out on its stdout (the runner keeps the submission's own output off it); stderr holds
the runner's diagnostics. The container is force-removed in every case.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import logging
import math
import os
import secrets
import select
import shutil
import socket
import struct
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import docker
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.models.containers import _create_container_args
from docker.types import LogConfig, Ulimit
from requests.exceptions import RequestException

from sandbox import seccomp
from sandbox.backends import cgroup, procmask, residency, unprivileged
from sandbox.backends.common import (
    SANDBOX_STDERR_CAP,
    WALL_GRACE,
    CpuBudget,
    RawRun,
    blas_kernel_environment,
    interpret,
)
from sandbox.backends.runtime import INSIDE_MOUNT, INSIDE_PACKAGE, entry_command
from sandbox.protocol import Limits, RunRequest, RunResult
from sandbox.wire import encode_job, stream_cap

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "tensorjudge/sandbox:latest"
# Must match sandbox/Dockerfile: the venv's interpreter and its stable site-packages link.
RUNNER_COMMAND = entry_command("/opt/venv/bin/python", "/opt/venv/site-packages")
SANDBOX_USER = "10001:10001"  # the image's own user; each run is given a host uid of its own
# The container's CPU quota, as a bwrap run's cgroup has (see cgroup.py).
CPU_CORES = 1.0
LABEL = "tensorjudge.sandbox"
DEADLINE_LABEL = "tensorjudge.deadline"
OWNER_LABEL = "tensorjudge.owner"  # which DockerSandbox made it: several may share an engine
# Docker multiplexes stdout (1) and stderr (2) on the attach socket: type, 3 pad, length.
_MUX_HEADER = struct.Struct(">BxxxL")
# RLIMIT_NPROC counts every process of the uid on the host (each run has its own): a backstop;
# the per-container bound is pids_limit.
_NPROC_FACTOR = 16
_NOFILE = 64  # as common.rlimits
# After a kill, how long to wait for the engine to report the container's end.
_KILL_WAIT_SECONDS = 10.0
# prune() removes a sandbox container once it is this long past its deadline label: by then the
# grader process that started it has died (a live one removes its containers itself).
_ORPHAN_GRACE_SECONDS = 30.0
# A grader restarted after a crash runs on without restarting its sandbox, so leftovers of the
# crashed one are swept from time to time while runs go on, not only at start-up.
_PRUNE_EVERY_SECONDS = 30.0
# The engine's default masked paths, which a list of our own replaces rather than extends.
_DOCKER_MASKED = (
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats",
    "/sys/devices/virtual/powercap", "/sys/firmware",
)  # fmt: skip


class DockerUnavailableError(RuntimeError):
    """No engine answers, or the sandbox image is missing."""


class StaleImageError(DockerUnavailableError):
    """The image's in-sandbox package is not this checkout's sandbox/inside: the protocol may
    differ."""


def package_digests(files: Iterable[tuple[str, bytes]]) -> dict[str, str]:
    """The in-sandbox package's source files (path inside the package, contents) as SHA-256
    digests by path: how this checkout's copy and an image's are compared. Only ``.py`` files
    count (bytecode is a cache)."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in files if name.endswith(".py")}


def host_package() -> dict[str, str]:
    """``package_digests`` of this checkout's ``sandbox/inside``."""
    return package_digests(
        (p.relative_to(INSIDE_PACKAGE).as_posix(), p.read_bytes())
        for p in sorted(INSIDE_PACKAGE.rglob("*.py"))
    )


@lru_cache
def seccomp_profile() -> str:
    """The bwrap backend's system-call policy in Docker's JSON form, so both backends deny the
    same calls. Docker's own default profile lets ptrace and io_uring through on this engine."""
    return json.dumps(seccomp.docker_profile(), separators=(",", ":"))


def container_options(limits: Limits) -> dict[str, Any]:
    """Everything the engine enforces for one run (kwargs of ``containers.create``)."""
    cpu = max(1, math.ceil(limits.cpu_seconds))
    # A torch job imports torch in its container: the libraries' pages are charged to its cgroup
    # and their writable mappings count in RLIMIT_DATA. They are the runtime's, not the
    # submission's (``Limits.runtime_mb``, added as the other backends add it to RLIMIT_AS).
    memory_mb = limits.memory_mb + limits.runtime_mb
    memory = f"{memory_mb}m"
    memory_bytes = memory_mb * 1024 * 1024
    # The runner's supervisor is PID 1 and the only task beyond what the submission may start.
    processes = limits.max_processes + 1
    return {
        "entrypoint": RUNNER_COMMAND,
        "command": [],
        "user": SANDBOX_USER,
        "environment": {},  # run() adds TENSORJUDGE_RUN, a random id, and the BLAS kernel's
        "working_dir": "/tmp",
        "hostname": "sandbox",
        "stdin_open": True,  # the SDK also sets StdinOnce: closing our end closes the runner's
        "tty": False,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {
            "/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,mode=1777",
            # An empty read-only tmpfs hides the host's sysfs (devices, kernel, cgroups).
            "/sys": "ro,noexec,nosuid,nodev,size=4k",
        },
        "cgroupns": "private",
        "ipc_mode": "none",  # no /dev/shm: the only writable place is the capped /tmp
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", f"seccomp={seccomp_profile()}"],
        "pids_limit": processes,
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(CPU_CORES * 1_000_000_000),
        "ulimits": [
            # SIGXCPU at the soft limit, SIGKILL one second later.
            Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
            Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
            Ulimit(name="nofile", soft=_NOFILE, hard=_NOFILE),
            Ulimit(name="core", soft=0, hard=0),
            # Docker has no RLIMIT_AS; RLIMIT_DATA (private writable memory) makes one huge
            # allocation a MemoryError, as AS does in the other backends. The cgroup limit
            # below is what stops gradual growth.
            Ulimit(name="data", soft=memory_bytes, hard=memory_bytes),
            Ulimit(name="nproc", soft=processes * _NPROC_FACTOR, hard=processes * _NPROC_FACTOR),
        ],
        # Output reaches us through attach only; nothing is logged to the engine's disk.
        "log_config": LogConfig(type=LogConfig.types.NONE),
    }


def masked_paths() -> list[str]:
    """What the engine covers in each container (an empty file over a file, an empty read-only
    tmpfs over a directory): every top-level /proc entry but the container's processes, as the
    bwrap backend does (``procmask``). The list is this host's /proc listing: an engine on
    another host with a newer kernel may show entries it lacks."""
    files, dirs = procmask.masked_entries()
    return sorted({*_DOCKER_MASKED, *(f"/proc/{name}" for name in files + dirs)})


# The engine masks a file with /dev/null, which opens and reads empty there. An empty
# /proc/cpuinfo makes torch's cpuinfo library count zero processors and crash torch's kernels
# (SIGSEGV in a transposed copy or an addition); where the file cannot be opened, as under
# bwrap's mask, it gives up and torch falls back to its defaults. So /proc/cpuinfo is covered by
# a host file no run may open (mode 000, no capabilities in the container): it says as little.
UNOPENABLE_MASKS = ("/proc/cpuinfo",)


@lru_cache(maxsize=4)
def _engine_is_on_our_host(client: docker.DockerClient) -> bool:
    """Whether the engine's host is this process's (its name is our hostname). A bind's source
    is a path on the engine's host: a grader in a container of its own (the compose stack's
    workers, talking to the host's engine through its socket) has no file there, so its runs
    keep the engine's /dev/null mask, no less hidden (but torch cannot run there)."""
    return bool(client.info().get("Name") == socket.gethostname())


@lru_cache(maxsize=1)
def unopenable_file() -> str:
    """An empty host file of mode 000, for ``UNOPENABLE_MASKS`` (bound read-only)."""
    directory = Path(tempfile.mkdtemp(prefix="tensorjudge-docker-"))
    directory.chmod(0o755)
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = directory / "unopenable"
    path.touch()
    path.chmod(0)
    return str(path)


def create_container(client: docker.DockerClient, image: str, **options: Any) -> Any:
    """``client.containers.create(image, **options)`` with ``masked_paths()``, which the SDK's
    own arguments cannot express (the engine's HostConfig.MaskedPaths, API 1.40)."""
    args = _create_container_args(
        {"image": image, "version": client.api._version, "command": None, **options}
    )
    masked = masked_paths()
    if not _engine_is_on_our_host(client):
        args["host_config"]["MaskedPaths"] = masked
        return client.containers.get(client.api.create_container(**args)["Id"])
    args["host_config"]["MaskedPaths"] = [p for p in masked if p not in UNOPENABLE_MASKS]
    args["host_config"]["Mounts"] = [
        *args["host_config"].get("Mounts", []),
        *(
            {"Type": "bind", "Source": unopenable_file(), "Target": p, "ReadOnly": True}
            for p in UNOPENABLE_MASKS
            if p in masked
        ),
    ]
    return client.containers.get(client.api.create_container(**args)["Id"])


class DockerSandbox:
    name = "docker"

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        base_url: str | None = None,
        host_uid_base: int = 200_000,
        keep_resident_seconds: float = residency.DEFAULT_PERIOD_SECONDS,
    ) -> None:
        self.image = image
        # Each container runs as a host uid of its own (no user namespace: the container's uid is
        # the host's), so per-user kernel counters and RLIMIT_NPROC count that run alone.
        self.host_uids = unprivileged.HostUids(host_uid_base)
        self.last_run_id = ""  # the TENSORJUDGE_RUN value of the latest run, for diagnostics
        self.owner = secrets.token_hex(8)
        self._next_prune = time.monotonic() + _PRUNE_EVERY_SECONDS
        try:
            self.client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
            self.client.images.get(image)
        except ImageNotFound as exc:
            raise DockerUnavailableError(
                f"the sandbox image {image} is missing: build it with .ci/docker-setup.sh "
                "or `docker build -t tensorjudge/sandbox:latest -f sandbox/Dockerfile sandbox`"
            ) from exc
        except (DockerException, RequestException, OSError) as exc:
            raise DockerUnavailableError(f"no Docker engine answers: {exc}") from exc
        theirs, ours = self.image_package(), host_package()
        stale = sorted(n for n in theirs.keys() | ours.keys() if theirs.get(n) != ours.get(n))
        if stale:
            raise StaleImageError(
                f"the runner in {image} differs from {INSIDE_PACKAGE} ({', '.join(stale)}): "
                "rebuild the image (bash .ci/docker-setup.sh)"
            )
        self.warmed_bytes = self.warm()
        # The engine's reading keeps no page resident for long if the machine's host reclaims
        # idle guest memory (residency.py); the image's layers on this host's disk are read
        # again and again. An engine on another host reads what it reads.
        self.residency = residency.shared_keeper(
            "image", f"image:{image}", self.layer_dirs, keep_resident_seconds
        )
        self.prune()

    def layer_dirs(self) -> list[Path]:
        """The image's layers as directories on this host (overlay2), if they are here."""
        try:
            data = self.client.images.get(self.image).attrs.get("GraphDriver", {}).get("Data", {})
        except (DockerException, RequestException):
            return []
        found = [*str(data.get("LowerDir") or "").split(":"), str(data.get("UpperDir") or "")]
        return [Path(d) for d in found if d and os.path.isdir(d)]

    def image_package(self) -> dict[str, str]:
        """``package_digests`` of the package baked into the image, read without starting a
        container."""
        container = self.client.containers.create(self.image, labels=self._labels(60.0))
        try:
            chunks, _ = container.get_archive(INSIDE_MOUNT)
            archive = b"".join(chunks)
        except NotFound:
            return {}  # an image from before the package: every file differs
        finally:
            with contextlib.suppress(NotFound, DockerException, RequestException):
                container.remove(force=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            # Members are named after the folder: inside/__main__.py, ...
            return package_digests(
                (PurePosixPath(*PurePosixPath(m.name).parts[1:]).as_posix(), f.read())
                for m in tar.getmembers()
                if m.isfile() and (f := tar.extractfile(m)) is not None
            )

    def warm(self) -> int:
        """Have the engine read every file of the image once; returns how many bytes it sent.

        A container's files are the image's layers on the host's disk, whose page cache every
        run shares: a run could load a cold page of a file nobody reads and a later run find it
        resident by timing its first read. Once every page is resident, no run can load one; none
        can evict one either, as long as fadvise and madvise(PAGEOUT/COLD) are denied and its
        memory cgroup only reclaims pages charged to itself (these are the engine's).
        """
        container = self.client.containers.create(self.image, labels=self._labels(60.0))
        total = 0
        try:
            chunks, _ = container.get_archive("/")
            for chunk in chunks:
                total += len(chunk)
        except (NotFound, DockerException, RequestException) as exc:
            # Runs still work; only this defence is missing, and the operator is told.
            log.warning("could not read the sandbox image's files into memory: %s", exc)
        finally:
            with contextlib.suppress(NotFound, DockerException, RequestException):
                container.remove(force=True)
        return total

    def run(self, request: RunRequest) -> RunResult:
        if time.monotonic() >= self._next_prune:
            self._next_prune = time.monotonic() + _PRUNE_EVERY_SECONDS
            self.prune()
        return interpret(self.execute(request), request, self.name)

    def execute(self, request: RunRequest) -> RawRun:
        """Run the job in a fresh container; what its streams and the engine said."""
        limits = request.limits
        job = encode_job(request)
        cap = stream_cap(request)
        run_id = secrets.token_hex(8)
        self.last_run_id = run_id
        options = container_options(limits)
        # Not a secret: it lets the host find this run's processes (as for bwrap).
        options["environment"] = {"TENSORJUDGE_RUN": run_id, **blas_kernel_environment()}
        host_uid = self.host_uids.take()
        options["user"] = f"{host_uid}:{host_uid}"
        container = None
        try:
            container = create_container(
                self.client,
                self.image,
                name=f"tj-sandbox-{run_id}",
                labels=self._labels(limits.wall_seconds * WALL_GRACE + 60.0),
                **options,
            )
            # Attach before start, so no output can come before we listen.
            attached = self.client.api.attach_socket(
                container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            conn: socket.socket = getattr(attached, "_sock", attached)
            try:
                container.start()
                # The wall clock starts once the runner exists, as for the local backends; so
                # does the run's reported wall time, which then leaves out creating the container
                # (seconds on a busy engine) and means the same on every backend.
                started = time.monotonic()
                deadline = started + limits.wall_seconds
                cpu = CpuBudget(limits, self._cpu_usage(container), CPU_CORES)
                with cpu.watching():
                    raw = _exchange(conn, job, cap, deadline, cpu)
                # A run that ended between two readings may still have gone past its budget.
                raw.cpu_exceeded = raw.cpu_exceeded or cpu.exceeded()
            finally:
                # The hijacked connection is ours alone: close it, not only its file wrapper.
                conn.close()
                attached.close()
            stopped = raw.timed_out or raw.stream_overflow or raw.cpu_exceeded
            if not stopped:
                try:
                    # The streams ended, so the runner has; the engine may take a moment.
                    remaining = max(0.0, deadline - time.monotonic())
                    status = container.wait(timeout=remaining + _KILL_WAIT_SECONDS)
                except RequestException:
                    raw.timed_out = True
            if stopped or raw.timed_out:
                with contextlib.suppress(NotFound, DockerException, RequestException):
                    container.kill()
                status = container.wait(timeout=_KILL_WAIT_SECONDS)
            raw.returncode = int(status.get("StatusCode", -1))
            container.reload()
            raw.oom_killed = bool(container.attrs["State"].get("OOMKilled"))
            raw.stdout = raw.stdout[:cap]
            raw.wall_seconds = time.monotonic() - started
            return raw
        except ImageNotFound:
            return RawRun(
                stdout=b"",
                launch_error=f"the sandbox image {self.image} is missing: "
                "build it with .ci/docker-setup.sh",
            )
        except (DockerException, RequestException, OSError) as exc:
            return RawRun(stdout=b"", launch_error=f"docker: {exc}")
        finally:
            if container is not None:
                with contextlib.suppress(NotFound, DockerException, RequestException):
                    container.remove(force=True)
            self.host_uids.give(host_uid)

    def _cpu_usage(self, container: Any) -> Callable[[], float | None]:
        """Reads the CPU time of all the container's processes: from its cgroup where this host
        shows it (the engine is local), else from the engine's statistics."""
        with contextlib.suppress(DockerException, RequestException, KeyError):
            container.reload()
            found = cgroup.process_cgroup_dir(int(container.attrs["State"]["Pid"] or 0))
            if found is not None and cgroup.cpu_seconds_in(found) is not None:
                return lambda: cgroup.cpu_seconds_in(found)

        def from_engine() -> float | None:
            try:
                stats = self.client.api.stats(container.id, stream=False, one_shot=True)
                return int(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9
            except (DockerException, RequestException, KeyError, TypeError, ValueError):
                return None

        return from_engine

    def _labels(self, lifetime_seconds: float) -> dict[str, str]:
        """Marks a container as ours, with the time after which prune() may remove it."""
        deadline = str(int(time.time() + lifetime_seconds))
        return {LABEL: "1", OWNER_LABEL: self.owner, DEADLINE_LABEL: deadline}

    def leftovers(self) -> list[str]:
        """Names of this sandbox's containers still on the engine (none between runs)."""
        mine = self.client.containers.list(
            all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={self.owner}"]}
        )
        return [str(c.name) for c in mine]

    def prune(self) -> int:
        """Remove sandbox containers a host process that died mid-run left behind: any whose
        deadline label is long past, running or not. Younger ones may belong to live runs of
        other grader processes on the same engine. Returns how many were removed."""
        removed = 0
        now = time.time()
        try:
            containers = self.client.containers.list(all=True, filters={"label": LABEL})
        except (DockerException, RequestException):
            return 0
        for container in containers:
            try:
                deadline = float((container.labels or {}).get(DEADLINE_LABEL, "0"))
            except ValueError:
                deadline = 0.0
            if now > deadline + _ORPHAN_GRACE_SECONDS:
                with contextlib.suppress(NotFound, DockerException, RequestException):
                    container.remove(force=True)
                    removed += 1
        return removed


def _exchange(
    conn: socket.socket, job: bytes, cap: int, deadline: float, cpu: CpuBudget | None = None
) -> RawRun:
    """Write the job, then read the multiplexed output until the container ends, the result
    stream passes ``cap`` bytes, the deadline passes or the ``cpu`` budget is used up."""
    raw = RawRun(stdout=b"")
    stdout = bytearray()
    stderr = bytearray()
    conn.setblocking(False)
    pending = memoryview(job)
    writing = True
    buffer = bytearray()
    try:
        while True:
            if cpu is not None and cpu.due_and_exceeded():
                raw.cpu_exceeded = True
                return raw
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                later = cpu.grace(deadline) if cpu is not None else None
                if later is None:
                    raw.timed_out = True
                    return raw
                deadline = later
                continue
            wanted = [conn] if writing else []
            wait = cpu.timeout(remaining) if cpu is not None else remaining
            readable, writable, _ = select.select([conn], wanted, [], wait)
            if writable:
                try:
                    pending = pending[conn.send(pending[: 1 << 16]) :]
                except BlockingIOError:
                    pass
                except OSError:
                    writing = False  # the runner is gone before reading it all; its end says why
                if writing and not pending:
                    writing = False
                    with contextlib.suppress(OSError):
                        conn.shutdown(socket.SHUT_WR)
            if not readable:
                continue
            try:
                chunk = conn.recv(1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return raw
            if not chunk:
                return raw
            buffer += chunk
            while len(buffer) >= _MUX_HEADER.size:
                kind, length = _MUX_HEADER.unpack_from(buffer)
                end = _MUX_HEADER.size + length
                if len(buffer) < end:
                    break
                if kind == 1:
                    stdout += buffer[_MUX_HEADER.size : end]
                elif len(stderr) < SANDBOX_STDERR_CAP:
                    stderr += buffer[_MUX_HEADER.size : end][: SANDBOX_STDERR_CAP - len(stderr)]
                del buffer[:end]
                if len(stdout) > cap:
                    raw.stream_overflow = True
                    return raw
    finally:
        raw.stdout = bytes(stdout)
        raw.stderr = bytes(stderr)
