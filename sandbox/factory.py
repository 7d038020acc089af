"""Choose the sandbox backend from settings (``GRADER_SANDBOX``)."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Protocol

from sandbox.protocol import Sandbox

log = logging.getLogger(__name__)


class SandboxSettings(Protocol):
    """The part of ``app.core.config.Settings`` a sandbox needs (read-only)."""

    @property
    def sandbox(self) -> str: ...
    @property
    def allow_unsafe_sandbox(self) -> bool: ...
    @property
    def sandbox_python(self) -> Path | None: ...
    @property
    def sandbox_host_uid_base(self) -> int: ...
    @property
    def sandbox_cgroup(self) -> bool: ...
    @property
    def sandbox_cgroup_parent(self) -> Path | None: ...
    @property
    def docker_image(self) -> str: ...
    @property
    def docker_url(self) -> str | None: ...


class UnsafeSandboxRefused(RuntimeError):
    pass


def _keep_resident(settings: SandboxSettings) -> float:
    from sandbox.backends.residency import DEFAULT_PERIOD_SECONDS

    # getattr: settings objects written before this existed have no such field.
    return float(getattr(settings, "sandbox_keep_resident_seconds", DEFAULT_PERIOD_SECONDS))


def make_sandbox(settings: SandboxSettings) -> Sandbox:
    kind = settings.sandbox
    if kind == "bwrap":
        from sandbox.backends.bwrap import BwrapSandbox

        bwrap = BwrapSandbox(
            python=settings.sandbox_python,
            host_uid_base=settings.sandbox_host_uid_base,
            use_cgroup=settings.sandbox_cgroup,
            cgroup_parent=settings.sandbox_cgroup_parent,
            keep_resident_seconds=_keep_resident(settings),
        )
        # getattr: settings objects written before these existed have no such field.
        # None: torch where the runtime has it; False: never.
        preload_torch = None if bool(getattr(settings, "sandbox_preload_torch", True)) else False
        if bool(getattr(settings, "sandbox_forkserver", False)):
            from sandbox.backends.forkserver import ForkServerSandbox

            return ForkServerSandbox(
                bwrap,
                spares=int(getattr(settings, "sandbox_forkserver_spares", 2)),
                preload_torch=preload_torch,
            )
        pool_size = int(getattr(settings, "sandbox_warm_pool", 0))
        if pool_size > 0:
            from sandbox.backends.pool import WarmPoolSandbox

            return WarmPoolSandbox(bwrap, size=pool_size, preload_torch=preload_torch)
        return bwrap
    if kind == "docker":
        # Imported lazily: the Docker SDK is only needed by deployments that choose it.
        docker_backend = importlib.import_module("sandbox.backends.docker")
        sandbox: Sandbox = docker_backend.DockerSandbox(
            image=settings.docker_image,
            base_url=settings.docker_url,
            host_uid_base=settings.sandbox_host_uid_base,
            keep_resident_seconds=_keep_resident(settings),
        )
        return sandbox
    if kind == "process":
        if not settings.allow_unsafe_sandbox:
            raise UnsafeSandboxRefused(
                "GRADER_SANDBOX=process runs submissions without isolation; "
                "set GRADER_ALLOW_UNSAFE_SANDBOX=1 to accept that (development only)"
            )
        from sandbox.backends.process import ProcessSandbox

        log.warning("GRADER_SANDBOX=process: submissions run WITHOUT isolation (development only)")
        return ProcessSandbox(python=settings.sandbox_python)
    raise ValueError(f"unknown sandbox backend {kind!r}")
