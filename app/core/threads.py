"""Blocking calls (short database transactions) from the hot async routes, on this process's own
thread pool.

``starlette.concurrency.run_in_threadpool`` goes through anyio, which wraps every call in a
capacity limiter, a cancel scope and a backend lookup: on the submission routes that machinery
cost more server CPU than the transactions it ran. This is asyncio's own executor hand-off, with
the caller's context variables, on a pool as large as anyio's default limiter.

One difference: a request cancelled while its call runs stops waiting at once (anyio waited for
the call to return); the call itself still runs to its end, as it did.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

# anyio's default number of worker threads.
MAX_THREADS = 40
# Threads that accept submissions (app.submissions.routes): a few are enough, since SQLite
# takes one writer at a time and the interpreter runs one thread's Python at a time. At a
# deadline, forty runnable threads took turns on the interpreter lock with the event loop, which
# then read (and stamped the arrival of) the next requests late; queued here, they wait
# without competing. Eight, not four, since accepts waiting for the write turn are committed
# together (app.db.group_commit): those waiting block without competing, and a batch holds at
# most this many (all 600 of a rush answered sooner in 4 of 4 pairs back to back,
# bench/results/2026-12-03.md).
ACCEPT_THREADS = 8

P = ParamSpec("P")
T = TypeVar("T")

_pool = ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="blocking")
_accepting = ThreadPoolExecutor(max_workers=ACCEPT_THREADS, thread_name_prefix="accepting")


async def in_thread(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``call(*args, **kwargs)`` on a pool thread, awaited without blocking the event loop."""
    return await _on(_pool, call, *args, **kwargs)


async def in_accepting_thread(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``in_thread`` on the few threads that accept submissions (``ACCEPT_THREADS``)."""
    return await _on(_accepting, call, *args, **kwargs)


async def _on(
    pool: ThreadPoolExecutor, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    context = contextvars.copy_context()
    bound = functools.partial(context.run, call, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(pool, bound)
