"""This process's writers of a SQLite file take turns in the process (app.db.engine.write_turn)
instead of meeting in SQLite's busy handler, which sleeps up to 100 ms between tries and left
some writers of a deadline burst waiting seconds."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.auth.accounts import create_user
from app.auth.models import ApiToken
from app.auth.tokens import authenticate, issue_token
from app.core.config import Settings
from app.db.engine import make_engine, write_turn
from app.worker.runtime import open_database


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(Settings(data_dir=tmp_path / "data"))
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, who TEXT)"))
    yield engine
    engine.dispose()


def _no_busy_wait(connection: object) -> None:
    """SQLite answers 'database is locked' at once instead of polling: any meeting of two
    writers in SQLite shows as an error."""
    raw = connection.connection.dbapi_connection  # type: ignore[attr-defined]
    assert isinstance(raw, sqlite3.Connection)
    raw.execute("PRAGMA busy_timeout=0")


def test_a_second_writer_waits_for_the_turn_not_for_sqlite(engine: Engine) -> None:
    """The first writer holds an open write transaction; the second, in another thread, with
    no busy timeout at all, starts its write only once the first has committed (without the
    turn its insert fails with 'database is locked')."""
    holding = threading.Event()
    entering = threading.Event()
    done = threading.Event()
    order: list[str] = []
    errors: list[BaseException] = []

    def first() -> None:
        with engine.connect() as connection, write_turn(connection):
            connection.execute(text("INSERT INTO t (who) VALUES ('first')"))
            holding.set()
            # The second writer is one statement from its insert: without the turn it fails
            # at once and says so (``done``); with it, it is still waiting when this commits.
            entering.wait(30)
            done.wait(1.0)
            order.append("first committed")
            connection.commit()

    def second() -> None:
        try:
            with engine.connect() as connection:
                _no_busy_wait(connection)
                entering.set()
                with write_turn(connection):
                    connection.execute(text("INSERT INTO t (who) VALUES ('second')"))
                    order.append("second wrote")
                    connection.commit()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            done.set()

    one = threading.Thread(target=first)
    one.start()
    assert holding.wait(30)
    two = threading.Thread(target=second)
    two.start()
    one.join(30)
    two.join(30)
    assert not errors, errors
    assert order == ["first committed", "second wrote"]
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT who FROM t ORDER BY id")).scalars().all()
    assert rows == ["first", "second"]


def test_the_turn_is_reentrant(engine: Engine) -> None:
    """A writer that commits twice (a request's two short transactions) takes the turn inside
    its own turn without waiting for itself."""
    with engine.connect() as connection, write_turn(connection):
        with write_turn(connection):
            connection.execute(text("INSERT INTO t (who) VALUES ('inner')"))
            connection.commit()
        connection.execute(text("INSERT INTO t (who) VALUES ('outer')"))
        connection.commit()
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM t")).scalar_one() == 2


def test_a_token_touch_steps_aside_while_writers_are_busy(tmp_path: Path) -> None:
    """A token's "last used" hint is not written while another writer of this process holds
    the turn (a deadline's inserts go first; the request neither waits nor fails), and is
    written by the next request once the turn is free."""
    engine, sessions = open_database(Settings(data_dir=tmp_path / "data"))
    try:
        with sessions() as session:
            user = create_user(session, "s@class.example", "Student", "member")
            token_row, secret = issue_token(session, user.id, "laptop")
            session.commit()
            token_id = token_row.id

        def last_used() -> object:
            with sessions() as session:
                row = session.get(ApiToken, token_id)
                assert row is not None
                return row.last_used_at

        holding = threading.Event()
        release = threading.Event()

        def busy_writer() -> None:
            with engine.connect() as connection, write_turn(connection):
                holding.set()
                release.wait(30)

        writer = threading.Thread(target=busy_writer)
        writer.start()
        try:
            assert holding.wait(30)
            with sessions() as session:
                principal = authenticate(session, secret)
            assert principal is not None and principal.user_id == user.id
            assert last_used() is None
        finally:
            release.set()
            writer.join(30)
        with sessions() as session:
            assert authenticate(session, secret) is not None
        assert last_used() is not None
    finally:
        engine.dispose()
