"""Lease renewal for every submission a process is grading, from one thread.

A thread per graded submission (start, stop, join: about a millisecond of CPU each) cost more
than the renewals themselves, which only happen every ``lease_seconds / 3`` (20 s by default)
while grading takes tens of milliseconds. One long-lived thread sleeps until the oldest held
lease is due, renews what is due, each in its own transaction, and forgets a lease that was lost.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.engine import write_turn
from app.submissions.repository import SubmissionRepository

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(self, settings: Settings, sessions: sessionmaker[Session]) -> None:
        self._settings = settings
        self._sessions = sessions
        self._lock = threading.Lock()
        # (submission id, lease token) -> monotonic time of the claim or the last renewal.
        self._held: dict[tuple[str, str], float] = {}
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Stop renewing; the thread ends within one interval."""
        self._stopped.set()

    @contextlib.contextmanager
    def holding(self, submission_id: str, token: str) -> Iterator[None]:
        """Renew the lease of ``submission_id`` under ``token`` until the block ends."""
        key = (submission_id, token)
        with self._lock:
            self._held[key] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="leases", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(key, None)

    def _interval(self) -> float:
        return self._settings.lease_seconds / 3

    def _loop(self) -> None:
        while not self._stopped.is_set():
            interval = self._interval()
            now = time.monotonic()
            with self._lock:
                due = [key for key, since in self._held.items() if now - since >= interval]
                pending = [since + interval - now for since in self._held.values()]
            for key in due:
                self._renew(key)
            if not due:
                # With nothing held, a full interval: a new hold is due no sooner than that.
                self._stopped.wait(min(pending, default=interval))

    def _renew(self, key: tuple[str, str]) -> None:
        submission_id, token = key
        lease = timedelta(seconds=self._settings.lease_seconds)
        try:
            with self._sessions() as session, write_turn(session.get_bind()):
                kept = SubmissionRepository(session).renew_lease(submission_id, token, lease)
                session.commit()
        except Exception:
            log.exception("renewing the lease of %s failed", submission_id)
            kept = True  # try again at the next interval
        with self._lock:
            if key in self._held:
                if kept:
                    self._held[key] = time.monotonic()
                else:
                    del self._held[key]  # someone else owns it now: stop renewing
