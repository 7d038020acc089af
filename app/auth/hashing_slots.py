"""At most ``GRADER_PASSWORD_HASHING_SLOTS`` argon2 computations at once, in the whole server.

Each argon2 verification or hash holds about 64 MiB and a core for a few hundred milliseconds:
forty sign-ins at once took the server from 179 to 2,053 MiB and stalled unrelated requests for
6-9 s (they also held forty of the thread pool's forty threads). Here a request waits for a
slot in the event loop, holding no thread, for at most ``GRADER_PASSWORD_HASHING_WAIT_SECONDS``;
then it gets ``Busy`` (the routes answer 503 with Retry-After). Slots are handed to waiters in
arrival order.

The slots are shared by every event loop of the process (a test client may run one per
request), so they are counted under a thread lock and handed over with
``call_soon_threadsafe`` rather than kept in one loop's ``asyncio.Semaphore``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

Result = TypeVar("Result")
# Seconds a caller turned away is told to wait: a slot frees within about one argon2 run.
BUSY_RETRY_AFTER = 2

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class Busy(Exception):
    """Every slot stayed taken for the whole wait."""


def _grant(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class HashingSlots:
    def __init__(self, size: int, wait_seconds: float) -> None:
        if size < 1:
            raise ValueError("at least one slot")
        self.size = size
        self.wait_seconds = wait_seconds
        self._lock = threading.Lock()
        self._free = size
        self._waiters: deque[_Waiter] = deque()

    async def run(self, work: Callable[..., Result], *args: object) -> Result:
        """``work(*args)`` in a worker thread once a slot is free; ``Busy`` if none freed in
        time (then ``work`` never ran)."""
        await self._acquire()
        try:
            return await run_in_threadpool(work, *args)
        finally:
            self._release()

    async def _acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            waiter: _Waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            # shield: a timeout must not cancel the future a releasing thread may be granting.
            await asyncio.wait_for(asyncio.shield(waiter[1]), self.wait_seconds)
        except BaseException as exc:  # timed out, or the request was cancelled
            with self._lock:
                granted = waiter not in self._waiters
                if not granted:
                    self._waiters.remove(waiter)
            if granted:
                self._release()  # handed over as we gave up: pass it on
            if isinstance(exc, TimeoutError):
                raise Busy() from None
            raise

    def _release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(_grant, future)
                    return
                except RuntimeError:  # that waiter's loop is closed: the next one
                    continue
            self._free += 1


def slots_of(request: Request) -> HashingSlots:
    """The server's slots, made with the app (``create_app``)."""
    slots: HashingSlots = request.app.state.hashing_slots
    return slots
