"""Accepting before grading, inside one process: submissions being accepted now (from their
request's arrival, app.core.arrival, to their row stored), and a way for the embedded grading
threads to step aside for them.

In the embedded mode the graders are threads of the API process: their host-side work (a run's
wire, comparing, diagnosing, storing) takes the interpreter lock and the database's write lock
from requests that only want to store a row. At a deadline that queued a class's submissions
for seconds behind gradings (docs/deadlines.md). A grading thread about to take its next
submission waits while any submission is being accepted, at most ``YIELD_SECONDS`` per
grading, so acceptance runs at the speed of its own work and grading never stops for long.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Longest a grading thread waits for acceptance to quiet down before it takes its next
# submission anyway: during a burst grading goes on at a few gradings per second per thread.
YIELD_SECONDS = 0.5


class Pressure:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)
        self._accepting = 0

    @property
    def accepting(self) -> int:
        return self._accepting

    @contextmanager
    def accepting_one(self) -> Iterator[None]:
        with self._lock:
            self._accepting += 1
        try:
            yield
        finally:
            with self._lock:
                self._accepting -= 1
                if self._accepting == 0:
                    self._quiet.notify_all()

    def yield_to_acceptance(self, timeout: float = YIELD_SECONDS) -> bool:
        """Wait until nothing is being accepted, at most ``timeout`` s; whether it is quiet."""
        with self._lock:
            return self._quiet.wait_for(lambda: self._accepting == 0, timeout)


PRESSURE = Pressure()
