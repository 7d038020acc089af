"""A warm pool in front of the bwrap backend: sandboxes launched ahead of demand.

Each pooled sandbox is an ordinary bwrap run (same namespaces, seccomp filter, rlimits and cgroup,
all in force from its launch) whose runner has already imported numpy and waits for its job on
stdin. A request takes one, sends its job, and the sandbox is destroyed afterwards exactly as a
cold run is: nothing is ever reused, so no state survives from one submission to the next. A
background thread launches replacements one at a time.

Rlimits and the tmpfs size are fixed when a sandbox is launched, so the pool holds sandboxes for
one set of limits: the latest requested. A request with other limits runs cold and re-keys the
pool (a deployment grades one problem's limits most of the time).

PyTorch jobs have sandboxes of their own, whose runners import torch too before the job arrives
(``preload_torch``, where torch is in the runtime): a torch job's limits (``runtime_mb``) differ
from its problem's NumPy jobs', and a NumPy runner would import torch on the job's own clock. They
are kept only once a PyTorch job has come (keyed to its limits, as the NumPy ones are to theirs),
so a deployment that never grades PyTorch holds no torch sandbox: the first PyTorch job (and one
with other limits) runs cold, and they are launched once it is over, not beside it; a torch job
never throws the NumPy sandboxes away. Each is still one fresh process
per run, destroyed after its job. Without ``preload_torch`` every PyTorch job runs cold.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.backends.bwrap import BwrapSandbox, StartedSandbox
from sandbox.protocol import Limits, RunRequest, RunResult
from sandbox.wire import encode_job

log = logging.getLogger(__name__)


@dataclass
class _Shelf:
    """Started sandboxes of one kind (torch imported or not) for one set of limits, the latest
    requested; ``limits`` None keeps none (no PyTorch job yet)."""

    torch: bool
    limits: Limits | None
    ready: deque[StartedSandbox] = field(default_factory=deque)

    def rekey(self, limits: Limits) -> list[StartedSandbox]:
        """Keep sandboxes for ``limits`` from now on; returns the stale ones to discard."""
        if limits == self.limits:
            return []
        self.limits = limits
        stale = list(self.ready)
        self.ready.clear()
        return stale


class WarmPoolSandbox:
    def __init__(
        self,
        inner: BwrapSandbox,
        size: int,
        limits: Limits | None = None,
        preload_torch: bool | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a warm pool needs a size of at least 1")
        self.inner = inner
        self.name = inner.name
        self.size = size
        # Sandboxes with torch imported for PyTorch jobs, where torch is in the runtime (unless
        # told not to); ``size`` of them once a PyTorch job has come.
        self.preload_torch = inner.runtime.has_torch if preload_torch is None else preload_torch
        self._numpy = _Shelf(torch=False, limits=limits if limits is not None else Limits())
        self._torch = _Shelf(torch=True, limits=None)
        self._cond = threading.Condition()
        self._closed = False
        # Counters for operators and the benchmark: runs served warm, and cold.
        self.warm_runs = 0  # PyTorch jobs included
        self.cold_runs = 0  # PyTorch jobs included
        self.torch_runs = 0  # PyTorch jobs, warm or cold
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
        torch = request.framework == "torch"
        shelf = self._torch if torch else self._numpy
        started = None
        if not torch or self.preload_torch:
            # A PyTorch job that finds none for its limits keys them once it is over: torch
            # sandboxes importing beside it would slow the cold run it has to make.
            started = self._take(shelf, request.limits, rekey=not torch)
        with self._cond:
            self.torch_runs += torch
            if started is None:
                self.cold_runs += 1
        if started is not None:
            return self.inner.finish(started, request, job)
        try:
            return self.inner.finish(self.inner.start(request.limits), request, job)
        finally:
            if torch and self.preload_torch:
                self._rekey(shelf, request.limits)

    def _rekey(self, shelf: _Shelf, limits: Limits) -> None:
        with self._cond:
            stale = shelf.rekey(limits)
            self._cond.notify_all()
        for sandbox in stale:
            sandbox.discard()

    def _take(self, shelf: _Shelf, limits: Limits, rekey: bool = True) -> StartedSandbox | None:
        """An idle sandbox of ``shelf`` for ``limits``, if one is ready; ``rekey``: keep
        sandboxes for ``limits`` from now on (else the shelf is left as it is when they differ)."""
        taken: StartedSandbox | None = None
        with self._cond:
            if limits != shelf.limits and not rekey:
                return None
            stale = shelf.rekey(limits)
            while shelf.ready and taken is None:
                candidate = shelf.ready.popleft()
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

    def _short(self) -> _Shelf | None:
        """The shelf to launch a sandbox for next (NumPy's first); None when both are full."""
        for shelf in (self._numpy, self._torch):
            if shelf.limits is not None and len(shelf.ready) < self.size:
                return shelf
        return None

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (shelf := self._short()) is None:
                    self._cond.wait()
                if self._closed or shelf is None:
                    return
                limits = shelf.limits
                assert limits is not None
            try:
                started = self.inner.start(limits, preload_torch=shelf.torch)
            except Exception:
                log.exception("could not launch a warm sandbox")
                with self._cond:
                    self._cond.wait(1.0)
                continue
            keep = False
            with self._cond:
                if not self._closed and limits == shelf.limits and started.alive():
                    shelf.ready.append(started)
                    keep = True
                    self._cond.notify_all()
            if not keep:
                started.discard()

    def prewarm(self, limits: Limits, timeout: float = 30.0, torch: bool = False) -> bool:
        """Key the pool (its PyTorch sandboxes with ``torch``) to ``limits`` and wait until a
        sandbox for them is ready."""
        shelf = self._torch if torch else self._numpy
        self._rekey(shelf, limits)
        with self._cond:
            return self._cond.wait_for(lambda: bool(shelf.ready) or self._closed, timeout)

    def idle(self, torch: bool = False) -> int:
        with self._cond:
            return len((self._torch if torch else self._numpy).ready)

    def close(self) -> None:
        """Stop refilling and destroy every idle sandbox."""
        with self._cond:
            self._closed = True
            idle = [*self._numpy.ready, *self._torch.ready]
            self._numpy.ready.clear()
            self._torch.ready.clear()
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
