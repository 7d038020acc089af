"""What the outboxes share (the LMS score outbox, the mail outbox): how long a failed send
waits before its next try, and the thread that runs a sender's pass every few seconds."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SendPolicy:
    retry_base: timedelta
    retry_max: timedelta
    give_up_after: timedelta
    lease: timedelta = timedelta(minutes=2)

    def backoff(self, attempts: int) -> timedelta:
        factor: int = 2 ** min(attempts - 1, 20)
        return min(self.retry_max, self.retry_base * factor)


class Periodic:
    """Runs ``work`` every ``interval`` seconds on a daemon thread until ``stop``; a pass that
    raises is logged and the next pass tries again (what it had to send stays in its outbox)."""

    def __init__(self, name: str, interval: float, work: Callable[[], object]) -> None:
        self._name = name
        self._interval = interval
        self._work = work
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._work()
            except Exception:
                log.exception("%s: pass failed", self._name)
