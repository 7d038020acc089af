"""The default execution mode: a pool of threads inside the API process, fed from the database.

Threads are enough because grading happens in sandbox child processes. The queue is the
``submissions`` table itself, so a restart loses nothing: at start-up every ``running`` row is
handed back to the queue (this process is the only grader of its database in this mode), and
every ``queued`` row is picked up in creation order.
"""

from __future__ import annotations

import logging
import threading
import time

from app.submissions.repository import SubmissionRepository
from app.worker.grader import GradingContext, claim_next_and_grade

log = logging.getLogger(__name__)


class EmbeddedPool:
    def __init__(self, ctx: GradingContext, size: int) -> None:
        self._ctx = ctx
        self._size = size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        with self._ctx.sessions() as session:
            requeued = SubmissionRepository(session).requeue_running(expired_only=False)
            session.commit()
        if requeued:
            log.info("re-queued %d submissions left running by the previous process", len(requeued))
        for index in range(self._size):
            thread = threading.Thread(target=self._work, name=f"grader-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        reaper = threading.Thread(target=self._reap, name="lease-reaper", daemon=True)
        reaper.start()
        self._threads.append(reaper)

    def dispatch(self, submission_id: str) -> None:
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking work. Submissions still being graded are re-queued by the next start."""
        self._stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        poll = self._ctx.settings.poll_seconds
        while not self._stop.is_set():
            try:
                if claim_next_and_grade(self._ctx):
                    continue
            except Exception:
                log.exception("embedded grader step failed")
            if self._wake.wait(poll):
                self._wake.clear()

    def _reap(self) -> None:
        """Re-queue submissions whose grading thread stopped renewing its lease (stuck)."""
        while not self._stop.wait(self._ctx.settings.sweep_seconds):
            try:
                with self._ctx.sessions() as session:
                    requeued = SubmissionRepository(session).requeue_running(expired_only=True)
                    session.commit()
            except Exception:
                log.exception("lease reaper failed")
                continue
            if requeued:
                log.warning("re-queued %d submissions with expired leases", len(requeued))
                self._wake.set()
