"""In-process completion notices: a request waiting for a verdict (``?wait``) is woken as soon as
a grader of the same process stores the result, instead of at its next database poll.

Only a hint: the database stays the truth. Where grading happens in other processes (Celery) no
notice arrives and waiters find the result by polling, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any


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
