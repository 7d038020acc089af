"""The ``process`` backend: the runner in a plain subprocess with rlimits. NO isolation: the
submission can read and write whatever the grader's user can. Development only; ``make_sandbox``
refuses it unless ``allow_unsafe_sandbox`` is set."""

from __future__ import annotations

import logging
import resource
import tempfile
from pathlib import Path

from sandbox.backends.common import apply_rlimits, interpret, rlimits, run_command
from sandbox.backends.runtime import HOST_ENTRY, discover, entry_command
from sandbox.protocol import RunRequest, RunResult
from sandbox.wire import encode_job, stream_cap

log = logging.getLogger(__name__)


class ProcessSandbox:
    name = "process"

    def __init__(self, python: Path | None = None) -> None:
        self.runtime = discover(python)
        log.warning(
            "sandbox backend 'process' runs submissions WITHOUT isolation; development only"
        )

    def run(self, request: RunRequest) -> RunResult:
        # RLIMIT_NPROC counts every process of this host user, not just the run's: left out here.
        limits = [r for r in rlimits(request.limits) if r[0] != resource.RLIMIT_NPROC]
        with tempfile.TemporaryDirectory(prefix="tj-process-") as home:
            raw = run_command(
                # The package where it lies on the host: this backend has no view of its own.
                entry_command(
                    str(self.runtime.executable),
                    str(self.runtime.site_packages),
                    str(HOST_ENTRY),
                ),
                encode_job(request),
                wall_seconds=request.limits.wall_seconds,
                stream_cap=stream_cap(request),
                preexec_fn=lambda: apply_rlimits(limits),
                env={"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"},
            )
        return interpret(raw, request, self.name)
