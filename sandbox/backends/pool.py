"""A warm pool in front of the bwrap backend: sandboxes launched ahead of demand.

Each pooled sandbox is an ordinary bwrap run (same namespaces, seccomp filter, rlimits and cgroup,
all in force from its launch) whose runner has already imported numpy and waits for its job on
stdin. A request takes one, sends its job, and the sandbox is destroyed afterwards exactly as a
cold run is: nothing is ever reused, so no state survives from one submission to the next. A
background thread launches replacements one at a time.

Rlimits and the tmpfs size are fixed when a sandbox is launched, so the pool holds sandboxes for
one set of limits: the latest requested. A request with other limits runs cold and re-keys the
pool (a deployment grades one problem's limits most of the time).

A PyTorch job runs cold and leaves the pool as it is: pooled runners hold numpy only, and a torch
job's limits (``runtime_mb``) differ from its problem's NumPy jobs', so it would otherwise throw
the pool away and leave the next NumPy grading cold too. Preloading torch in every pooled
sandbox would cost each ~200 MiB and seconds of CPU whether a torch job comes or not; the fork
server is where torch is preloaded (once, in its zygote).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import weakref
from collections import deque
from pathlib import Path

from sandbox.backends.bwrap import BwrapSandbox, StartedSandbox
from sandbox.protocol import Limits, RunRequest, RunResult
from sandbox.wire import encode_job

log = logging.getLogger(__name__)


class WarmPoolSandbox:
    def __init__(self, inner: BwrapSandbox, size: int, limits: Limits | None = None) -> None:
        if size < 1:
            raise ValueError("a warm pool needs a size of at least 1")
        self.inner = inner
        self.name = inner.name
        self.size = size
        self._limits = limits if limits is not None else Limits()
        self._ready: deque[StartedSandbox] = deque()
        self._cond = threading.Condition()
        self._closed = False
        # Counters for operators and the benchmark: runs served warm, and cold.
        self.warm_runs = 0
        self.cold_runs = 0  # PyTorch jobs included, also counted in ``torch_runs``
        self.torch_runs = 0
        self._filler = threading.Thread(target=self._fill, name="sandbox-warm-pool", daemon=True)
        self._filler.start()
        atexit.register(_close_at_exit, weakref.ref(self))

    # The latest run's identity, for diagnostics and the leftover checks of the tests.
    @property
    def last_run_id(self) -> str:
        return self.inner.last_run_id

    @property
    def last_cgroup_dirs(self) -> list[Path]:
        return self.inner.last_cgroup_dirs

    def run(self, request: RunRequest) -> RunResult:
        job = encode_job(request)  # before a sandbox is taken (``BwrapSandbox.finish``)
        if request.framework == "torch":
            with self._cond:
                self.cold_runs += 1
                self.torch_runs += 1
            return self.inner.finish(self.inner.start(request.limits), request, job)
        started = self._take(request.limits)
        if started is None:
            with self._cond:
                self.cold_runs += 1
            started = self.inner.start(request.limits)
        return self.inner.finish(started, request, job)

    def _take(self, limits: Limits) -> StartedSandbox | None:
        stale: list[StartedSandbox] = []
        taken: StartedSandbox | None = None
        with self._cond:
            if limits != self._limits:
                self._limits = limits
                stale.extend(self._ready)
                self._ready.clear()
            while self._ready and taken is None:
                candidate = self._ready.popleft()
                if candidate.alive():
                    taken = candidate
                else:
                    stale.append(candidate)
            if taken is not None:
                self.warm_runs += 1
            self._cond.notify_all()
        for sandbox in stale:
            sandbox.discard()
        return taken

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._ready) >= self.size:
                    self._cond.wait()
                if self._closed:
                    return
                limits = self._limits
            try:
                started = self.inner.start(limits)
            except Exception:
                log.exception("could not launch a warm sandbox")
                with self._cond:
                    self._cond.wait(1.0)
                continue
            keep = False
            with self._cond:
                if not self._closed and limits == self._limits and started.alive():
                    self._ready.append(started)
                    keep = True
                    self._cond.notify_all()
            if not keep:
                started.discard()

    def prewarm(self, limits: Limits, timeout: float = 30.0) -> bool:
        """Key the pool to ``limits`` and wait until a sandbox for them is ready."""
        stale: list[StartedSandbox] = []
        with self._cond:
            if limits != self._limits:
                self._limits = limits
                stale.extend(self._ready)
                self._ready.clear()
                self._cond.notify_all()
        for sandbox in stale:
            sandbox.discard()
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._ready) or self._closed, timeout)

    def idle(self) -> int:
        with self._cond:
            return len(self._ready)

    def close(self) -> None:
        """Stop refilling and destroy every idle sandbox."""
        with self._cond:
            self._closed = True
            idle = list(self._ready)
            self._ready.clear()
            self._cond.notify_all()
        for sandbox in idle:
            with contextlib.suppress(Exception):
                sandbox.discard()
        if threading.current_thread() is not self._filler:
            self._filler.join(timeout=10)


def _close_at_exit(ref: weakref.ref[WarmPoolSandbox]) -> None:
    pool = ref()
    if pool is not None:
        pool.close()
