"""Group commit on SQLite: short write transactions that wait for the write turn are committed
together.

At a deadline the threads accepting submissions spent half their time waiting for SQLite's
write lock, and its holder was mostly inside COMMIT (an fsync of the WAL with
``synchronous=FULL``): every accept paid for its own commit and for each one queued before
it. Here a writer that finds others already waiting joins them instead: the first in line (the
leader) takes the write turn, runs every waiting writer's statements in its own session, in
order, commits once, and hands each its own outcome. A writer whose statements fail gets its
own error, and only it: the leader rolls back and runs the others again without it (SQLite
has no usable savepoints through pysqlite, and a failure here is rare: an insert the unique
indexes refuse, e.g. a concurrent retry with the same Idempotency-Key or graded attempt); a
failed commit is tried again one writer at a time.

Each writer's checks still read the committed state before its turn, as alone, and see the
rows of the writers before it in the batch (one transaction, in order), so the unique indexes
decide races exactly as between separate transactions; the refused writer retries after the
batch has committed, and sees the winner's row.

PostgreSQL locks rows, not the database: there each writer commits its own transaction, as it
did before.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from itertools import islice

from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import is_sqlite, write_turn

# The most writers one commit takes; those beyond wait for the next (a bound on how long a
# leader holds the write lock, which the graders need too).
MAX_BATCH = 64

Write = Callable[[Session], None]


class _Writer:
    __slots__ = ("done", "error", "write")

    def __init__(self, write: Write) -> None:
        self.write = write
        self.done = False
        self.error: BaseException | None = None


class CommitGroup:
    """The writers of one sessionmaker's SQLite database in this process, queued for their
    turn. The leader's session does the batch's work, so its ``after_commit`` listeners (e.g.
    waking event streams, app.submissions.notices) see every writer's changes: all the
    sessions given to ``commit`` must come from that sessionmaker."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._queue: deque[_Writer] = deque()

    @property
    def waiting(self) -> int:
        """Writers queued now, the one leading a batch included."""
        with self._changed:
            return len(self._queue)

    def commit(self, session: Session, write: Write) -> None:
        """``write(s)`` on a session ``s`` in a write transaction, then committed: raises what
        ``write`` raised (nothing of it stored), or what the commit raised. ``session`` is the
        caller's (its reads took no write lock), used if this caller leads the batch. Never called
        holding the write turn (``write_turn``): the leader it would wait for waits for that."""
        if not is_sqlite(session.get_bind().engine):
            write(session)
            session.commit()
            return
        writer = _Writer(write)
        with self._changed:
            self._queue.append(writer)
            while not writer.done and self._queue[0] is not writer:
                self._changed.wait()
        if not writer.done:
            self._lead(session, writer)
        if writer.error is not None:
            raise writer.error

    def _lead(self, session: Session, leader: _Writer) -> None:
        batch = [leader]
        try:
            with write_turn(session.get_bind()):
                # Taken once the turn is ours: writers that queued while the leader waited for
                # it (behind a grader's commit) are in this batch.
                with self._changed:
                    batch = list(islice(self._queue, MAX_BATCH))
                _write_all(session, batch)
        except BaseException as error:  # the turn or the commit: none of the batch is stored
            for writer in batch:
                if writer.error is None:
                    writer.error = error
        finally:
            with self._changed:
                for writer in batch:
                    writer.done = True
                    self._queue.popleft()
                self._changed.notify_all()


def _write_all(session: Session, batch: list[_Writer]) -> None:
    """Every writer of ``batch`` that does not fail, in one transaction, committed; a writer
    that fails keeps its error, and the transaction is begun again without it. A commit that
    fails (a row only COMMIT checks, or the disk) is tried again one writer at a time, so
    each writer is told of its own."""
    pending = list(batch)
    while pending:
        for writer in pending:
            try:
                writer.write(session)
            except Exception as error:
                writer.error = error
                session.rollback()
                pending.remove(writer)
                break
        else:
            try:
                session.commit()
            except Exception:
                session.rollback()
                if len(pending) == 1:
                    raise
                for writer in pending:
                    _write_alone(session, writer)
            return


def _write_alone(session: Session, writer: _Writer) -> None:
    try:
        writer.write(session)
        session.commit()
    except Exception as error:
        session.rollback()
        writer.error = error


_GROUPS: weakref.WeakKeyDictionary[sessionmaker[Session], CommitGroup] = weakref.WeakKeyDictionary()
_GROUPS_GUARD = threading.Lock()


def commit_group(sessions: sessionmaker[Session]) -> CommitGroup:
    """The group of ``sessions``'s writers in this process (made on first use, gone with it)."""
    with _GROUPS_GUARD:
        group = _GROUPS.get(sessions)
        if group is None:
            group = _GROUPS[sessions] = CommitGroup()
        return group
