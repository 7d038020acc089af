"""In-process notices: a request waiting for a verdict (``?wait``) is woken as soon as a grader of
the same process stores the result, and an event stream (SSE) as soon as a transaction of this
process that wrote its events commits, instead of at their next database poll.

Only hints: the database stays the truth. Where grading happens in other processes (Celery) no
notice arrives and waiters find what they wait for by polling, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from app.submissions.repository import EVENTS_WRITTEN


class Notice:
    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        # What the grader committed (as a ``SubmissionOut``), when it passed it along.
        self.result: Any = None

    def _set(self, result: Any) -> None:
        self.result = result
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> None:
        """Until the notice arrives or ``timeout`` seconds pass, whichever is first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)


class Completions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Notice]] = {}

    @contextlib.contextmanager
    def watch(self, submission_id: str) -> Iterator[Notice]:
        """Register before reading the database, so a result stored in between is not missed."""
        notice = Notice()
        with self._lock:
            self._waiting.setdefault(submission_id, []).append(notice)
        try:
            yield notice
        finally:
            with self._lock:
                notices = self._waiting.get(submission_id, [])
                if notice in notices:
                    notices.remove(notice)
                if not notices:
                    self._waiting.pop(submission_id, None)

    def watched(self, submission_id: str) -> bool:
        """Whether a request of this process waits for ``submission_id`` (then its result is
        worth building for ``finished``)."""
        with self._lock:
            return submission_id in self._waiting

    def finished(self, submission_id: str, result: Any = None) -> None:
        """Called from any thread once the result is committed; ``result``: the row as
        committed (a ``SubmissionOut``), which waiters may answer with instead of reading it
        back."""
        with self._lock:
            notices = list(self._waiting.get(submission_id, []))
        for notice in notices:
            with contextlib.suppress(RuntimeError):  # its event loop has closed
                notice._set(result)


COMPLETIONS = Completions()


class Signal:
    """Wakes one event stream, as often as its submission's events are committed here."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def _set(self) -> None:
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> None:
        """Until events were committed since the last wait, or ``timeout`` seconds pass."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        self._event.clear()


class Activity:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, list[Signal]] = {}

    @contextlib.contextmanager
    def watch(self, submission_id: str) -> Iterator[Signal]:
        """Register before reading the database, so events committed in between are not missed."""
        signal = Signal()
        with self._lock:
            self._streams.setdefault(submission_id, []).append(signal)
        try:
            yield signal
        finally:
            with self._lock:
                signals = self._streams.get(submission_id, [])
                if signal in signals:
                    signals.remove(signal)
                if not signals:
                    self._streams.pop(submission_id, None)

    def committed(self, submission_ids: Iterable[str]) -> None:
        """Called from any thread once events of these submissions are committed."""
        with self._lock:
            signals = [s for sid in submission_ids for s in self._streams.get(sid, [])]
        for signal in signals:
            with contextlib.suppress(RuntimeError):  # its event loop has closed
                signal._set()


ACTIVITY = Activity()


def announce_event_commits(
    sessions: sessionmaker[Session],
    publish: Callable[[Mapping[str, Set[str]]], None] | None = None,
) -> None:
    """Wake this process's event streams when a session of ``sessions`` commits events (the
    repository notes in ``session.info`` which submissions it wrote which events for), and tell
    other processes through ``publish`` ({submission id: event kinds}; the scale-out mode's
    ``app.worker.broadcast.Broadcaster``)."""

    @event.listens_for(sessions, "after_commit")
    def _after_commit(session: Session) -> None:
        written = session.info.pop(EVENTS_WRITTEN, None)
        if written:
            ACTIVITY.committed(written)
            if publish is not None:
                publish(written)

    @event.listens_for(sessions, "after_rollback")
    def _after_rollback(session: Session) -> None:
        session.info.pop(EVENTS_WRITTEN, None)
