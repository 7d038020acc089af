"""In-process notices: a request waiting for a verdict (``?wait``) is woken as soon as a grader of
the same process stores the result, and an event stream (SSE) as soon as a transaction of this
process that wrote its events commits, instead of at their next database poll.

Only hints: the database stays the truth, read now and then as a safety net. Commits made in
other processes (Celery workers) arrive over Redis (``app.submissions.broadcast``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from app.grading.schemas import GradeReport
from app.submissions.models import Submission
from app.submissions.repository import EVENTS_WRITTEN


@dataclass(frozen=True)
class Completed:
    """A result as its grader just committed it: a detached copy of the row, and its report
    already parsed, so a waiting request answers without reading either back."""

    row: Submission
    report: GradeReport


class Wakeup:
    """Wakes one waiting request (``?wait``) or event stream, from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        # What the grader committed, when it passed it along.
        self.result: Completed | None = None

    def set(self, result: Completed | None = None) -> None:
        if result is not None:
            self.result = result
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> None:
        """Until woken since the last wait, or ``timeout`` seconds pass, whichever is first."""
        # A timeout scope, not ``wait_for``, which wraps the wait in a task of its own.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._event.wait()
        self._event.clear()


class Watchers:
    """This process's requests waiting on submissions, by submission id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Wakeup]] = {}

    @contextlib.contextmanager
    def watch(self, submission_id: str) -> Iterator[Wakeup]:
        """Register before reading the database, so what is committed in between is not
        missed."""
        wakeup = Wakeup()
        with self._lock:
            self._waiting.setdefault(submission_id, []).append(wakeup)
        try:
            yield wakeup
        finally:
            with self._lock:
                wakeups = self._waiting.get(submission_id, [])
                if wakeup in wakeups:
                    wakeups.remove(wakeup)
                if not wakeups:
                    self._waiting.pop(submission_id, None)

    def watched(self, submission_id: str) -> bool:
        """Whether a request of this process waits on ``submission_id`` (e.g. so that a result
        is worth building for ``wake``)."""
        with self._lock:
            return submission_id in self._waiting

    def wake(self, submission_ids: Iterable[str], result: Completed | None = None) -> None:
        """Called from any thread once something is committed for these submissions."""
        with self._lock:
            wakeups = [w for sid in submission_ids for w in self._waiting.get(sid, [])]
        for wakeup in wakeups:
            with contextlib.suppress(RuntimeError):  # its event loop has closed
                wakeup.set(result)


# ``?wait`` requests, woken once a submission's result is stored; a grader of this process passes
# what it committed along (``Completed``), so they need not read it back.
COMPLETIONS = Watchers()
# Event streams, woken whenever a submission's events are committed.
ACTIVITY = Watchers()


def announce_event_commits(
    sessions: sessionmaker[Session],
    publish: Callable[[Mapping[str, Set[str]]], None] | None = None,
) -> None:
    """Wake this process's event streams when a session of ``sessions`` commits events (the
    repository notes in ``session.info`` which submissions it wrote which events for), and tell
    other processes through ``publish`` ({submission id: event kinds}; the scale-out mode's
    ``app.submissions.broadcast.Broadcaster``)."""

    @event.listens_for(sessions, "after_commit")
    def _after_commit(session: Session) -> None:
        written = session.info.pop(EVENTS_WRITTEN, None)
        if written:
            ACTIVITY.wake(written)
            if publish is not None:
                publish(written)

    @event.listens_for(sessions, "after_rollback")
    def _after_rollback(session: Session) -> None:
        session.info.pop(EVENTS_WRITTEN, None)
