"""Deployment-wide limits (``GRADER_CPU_SECONDS`` and friends) as ceilings on every run: a
problem may ask for less than the deployment allows, never more."""

from __future__ import annotations

from app.core.config import Settings
from sandbox.protocol import Limits, RunRequest, RunResult, Sandbox


def capped(limits: Limits, settings: Settings) -> Limits:
    return limits.model_copy(
        update={
            "cpu_seconds": min(limits.cpu_seconds, settings.cpu_seconds),
            "wall_seconds": min(limits.wall_seconds, settings.wall_seconds),
            "memory_mb": min(limits.memory_mb, settings.memory_mb),
            "max_processes": min(limits.max_processes, settings.max_processes),
            "output_bytes": min(limits.output_bytes, settings.output_bytes),
        }
    )


class CappedSandbox:
    """Wraps a backend; the backend still enforces the (capped) limits from outside."""

    def __init__(self, inner: Sandbox, settings: Settings) -> None:
        self.inner = inner
        self.settings = settings
        self.name = inner.name

    def run(self, request: RunRequest) -> RunResult:
        limits = capped(request.limits, self.settings)
        return self.inner.run(request.model_copy(update={"limits": limits}))

    def close(self) -> None:
        """Ends the backend's long-lived sandboxes (a fork server, a warm pool), if it has any."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
