"""The default execution mode: a pool of threads inside the API process, fed from the database.

Threads are enough because grading happens in sandbox child processes. The queue is the
``submissions`` table itself, so a restart loses nothing: at start-up every ``running`` row is
handed back to the queue (this process is the only grader of its database in this mode), and
every ``queued`` row is picked up in fair order (``SubmissionRepository.claim_next``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from app.core import events, metrics
from app.submissions.models import Submission
from app.submissions.pressure import PRESSURE
from app.submissions.repository import RUNNING, SubmissionRepository
from app.worker.grader import GradingContext, claim_and_grade, grade_claimed, next_claimable

log = logging.getLogger(__name__)


class EmbeddedPool:
    def __init__(self, ctx: GradingContext, size: int) -> None:
        self._ctx = ctx
        self._size = size
        self._lock = threading.Lock()
        # Dispatches not yet taken by a thread: each wakes one idle thread at once, so the
        # database is only polled (with a read, not a claim) as a safety net.
        self._pending = 0
        # Dispatches that found their client busy: their submission waits for that client's
        # grading to end. A grading ends with a read for claimable work only while one is
        # counted here (or when its submission went back to the queue), not after every grading.
        # A count may outlive its submission (claimed by a thread that read rather than took a
        # dispatch): that costs a read per grading, as if nothing were counted.
        self._missed = 0
        # Threads waiting for work, most recently idle last; one set aside for a submission
        # being accepted (``reserve``) leaves this list, so nothing else wakes it.
        self._idle: list[_Waiter] = []
        self._waiting: set[_Waiter] = set()  # those and the ones set aside (``stop``)
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

    @property
    def idle(self) -> int:
        """Threads waiting for work now, not set aside (tests, operators)."""
        with self._lock:
            return len(self._idle)

    def dispatch(self, submission_id: str) -> None:
        self._notify(1)

    def reserve(self) -> _Reservation | None:
        """Set an idle thread aside for a submission being accepted; None if none is idle."""
        with self._lock:
            if self._stop.is_set() or not self._idle:
                return None
            waiter = self._idle.pop()
            waiter.reserved = True
        return _Reservation(self, waiter, self._ctx.name, self._ctx.lease)

    def _hand(self, waiter: _Waiter, handed: _Handed | None) -> None:
        """A reservation ends: its thread gets the submission (claimed), or is let go."""
        with self._lock:
            waiter.handed = handed
            waiter.reserved = False
        waiter.woken.set()

    def _notify(self, count: int) -> None:
        with self._lock:
            self._pending += count
            woken = [self._idle.pop() for _ in range(min(count, len(self._idle)))]
        for waiter in woken:
            waiter.woken.set()

    def _woken(self, timeout: float) -> _Handed | bool:
        """A submission handed to this thread, else one dispatch taken, waiting up to
        ``timeout`` for either; False if there was none."""
        with self._lock:
            if self._pending > 0:
                self._pending -= 1
                return True
            if timeout <= 0 or self._stop.is_set():
                return False
            waiter = _Waiter()
            self._idle.append(waiter)
            self._waiting.add(waiter)
        try:
            waiter.woken.wait(timeout)
            with self._lock:
                if waiter in self._idle:
                    self._idle.remove(waiter)  # nobody woke it: its time was up
            # Set aside: the accepting transaction ends in milliseconds, with its submission
            # or a release, and only then is the thread free again.
            while waiter.reserved and not self._stop.is_set():
                waiter.woken.wait(1.0)
        finally:
            with self._lock:
                self._waiting.discard(waiter)
        if waiter.handed is not None:
            return waiter.handed
        with self._lock:
            if self._pending > 0:
                self._pending -= 1
                return True
        return False

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking work. Submissions still being graded are re-queued by the next start."""
        self._stop.set()
        with self._lock:
            waiting = list(self._waiting)
        for waiter in waiting:
            waiter.woken.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._ctx.close()

    def _work(self) -> None:
        poll = self._ctx.settings.poll_seconds
        # ``dispatched``: a dispatch taken, so claim at once. Else read first (``look``): a
        # claim that finds nothing is still a write transaction, and would take SQLite's write
        # lock for nothing. At start-up nothing was dispatched yet: a read finds what the last
        # process left.
        dispatched: _Handed | bool = False
        look, missed = True, False
        while not self._stop.is_set():
            try:
                outcome = None
                if dispatched or look:
                    # Submissions being accepted first (app.submissions.pressure).
                    PRESSURE.yield_to_acceptance()
                if isinstance(dispatched, _Handed):
                    outcome = self._grade_handed(dispatched)
                elif dispatched or (look and self._claimable_exists()):
                    outcome = claim_and_grade(self._ctx)
                    if outcome is None and dispatched:
                        self._miss()
                if outcome is not None:
                    dispatched = self._woken(0)
                    missed = not dispatched and self._take_missed()
                    look = missed or outcome is False
                    continue
                if missed:
                    self._miss()  # still waiting behind its client's grading
            except Exception:
                log.exception("embedded grader step failed")
            dispatched, look, missed = self._woken(poll), True, False

    def _grade_handed(self, handed: _Handed) -> bool:
        submission = handed.submission
        events.state_changed(submission.id, submission.problem_id, RUNNING, attempt=1)
        return grade_claimed(self._ctx, submission, handed.token, handed.claimed)

    def _miss(self) -> None:
        with self._lock:
            self._missed += 1

    def _take_missed(self) -> bool:
        with self._lock:
            if self._missed == 0:
                return False
            self._missed -= 1
            return True

    def _claimable_exists(self) -> bool:
        return next_claimable(self._ctx) is not None

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
                metrics.leases_expired(len(requeued))
                for submission_id in requeued:
                    events.state_changed(submission_id, None, "requeued", reason="lease_expired")
                self._notify(len(requeued))


@dataclass(frozen=True)
class _Handed:
    submission: Submission
    token: str
    claimed: float  # time.perf_counter() when it was given


class _Waiter:
    """An idle thread's place: woken alone, by a dispatch or by what it was set aside for."""

    def __init__(self) -> None:
        self.woken = threading.Event()
        self.reserved = False
        self.handed: _Handed | None = None


class _Reservation:
    """``Handoff`` of the pool: one idle thread set aside, ended once (given or let go)."""

    def __init__(self, pool: EmbeddedPool, waiter: _Waiter, worker: str, lease: timedelta) -> None:
        self._pool: EmbeddedPool | None = pool
        self._waiter = waiter
        self.worker = worker
        self.lease = lease

    def give(self, submission: Submission, token: str) -> None:
        self._end(_Handed(submission, token, time.perf_counter()))

    def cancel(self) -> None:
        self._end(None)

    def _end(self, handed: _Handed | None) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._hand(self._waiter, handed)
