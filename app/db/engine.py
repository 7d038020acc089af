"""Engines and sessions built from ``Settings.effective_database_url``.

SQLite runs in WAL mode with a busy timeout, so the API, the embedded workers and a CLI can
share the file; PostgreSQL is used through psycopg 3 when ``GRADER_DATABASE_URL`` is set.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Request handlers reach the database from the thread pool (40 threads in anyio), on top of
# the grading workers: let bursts borrow connections instead of queueing for the pool.
POOL_OVERFLOW = 40


def normalize_url(url: str) -> str:
    """``postgresql://`` alone would pick psycopg2, which is not installed: use psycopg 3."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def make_engine(settings: Settings) -> Engine:
    url = normalize_url(settings.effective_database_url)
    if make_url(url).get_backend_name() == "sqlite":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            # A SQLite connection is a file handle: keep the burst connections too. Closing
            # overflow connections on return made busy periods reconnect (and re-run the
            # pragmas) for most requests.
            pool_size=max(5, settings.workers + 4) + POOL_OVERFLOW,
            max_overflow=POOL_OVERFLOW,
        )
        synchronous = settings.sqlite_synchronous

        def pragmas(dbapi_connection: Any, connection_record: Any) -> None:
            _sqlite_pragmas(dbapi_connection, synchronous)

        event.listen(engine, "connect", pragmas)
        return engine
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=max(5, settings.workers + 4),
        max_overflow=POOL_OVERFLOW,
    )


def _sqlite_pragmas(dbapi_connection: Any, synchronous: str) -> None:
    assert isinstance(dbapi_connection, sqlite3.Connection)
    assert synchronous in ("NORMAL", "FULL")
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    # WAL + NORMAL: a commit is in the WAL file before it returns (safe if this process dies)
    # but fsynced only at checkpoints; FULL also fsyncs the WAL on every commit.
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# One lock per SQLite file, for this process's writers (``write_turn``).
_WRITERS: dict[str, threading.RLock] = {}
_WRITERS_GUARD = threading.Lock()


@contextmanager
def write_turn(bind: Engine | Connection) -> Iterator[None]:
    """Hold this process's turn to write a SQLite file for a short write transaction.

    SQLite has one writer at a time, and a connection that finds the file locked polls it in
    its busy handler, sleeping up to 100 ms between tries: at a deadline dozens of request
    threads polled so, and a commit that freed the lock was followed by sleeps instead of the
    next write (accept p95 of seconds for a few milliseconds of work each). Waiting here
    instead, a writer is woken the moment the previous one releases the turn, and threads that
    wait do not compete for the interpreter lock with the one that holds the write lock.
    Reentrant (a writer may commit twice). PostgreSQL locks rows, not the database: nothing
    to wait for."""
    lock = _writers_lock(bind.engine)
    if lock is None:
        yield
        return
    with lock:
        yield


@contextmanager
def spare_write_turn(bind: Engine | Connection) -> Iterator[bool]:
    """The turn only if no other writer of this process holds it now: True, held until the
    end; False, not taken (for a write that can wait for a quieter moment, e.g. a "last used"
    hint, so it never queues before a submission's insert)."""
    lock = _writers_lock(bind.engine)
    if lock is None:
        yield True
        return
    if not lock.acquire(blocking=False):
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def _writers_lock(engine: Engine) -> threading.RLock | None:
    """This process's lock for ``engine``'s SQLite file; None for other databases."""
    if engine.dialect.name != "sqlite":
        return None
    key = str(engine.url)
    with _WRITERS_GUARD:
        return _WRITERS.setdefault(key, threading.RLock())


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
