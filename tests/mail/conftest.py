"""A real SMTP server on 127.0.0.1 (aiosmtpd), what it received, and a database to send from."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from app.core.config import Settings
from app.core.retry import SendPolicy
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.people import People, seed_people


@dataclass
class Inbox:
    """What the server took; ``arrived`` is set on every mail (await it, never sleep)."""

    port: int = 0
    mails: list[tuple[str, list[str], EmailMessage]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    # An SMTP reply that refuses every recipient instead of taking it (e.g. "550 ...").
    refuse_rcpt: str | None = None
    refuse_data: str | None = None

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        if self.refuse_rcpt is not None:
            return self.refuse_rcpt
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.refuse_data is not None:
            return self.refuse_data
        content = envelope.original_content or b""
        message = message_from_bytes(content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        self.mails.append((str(envelope.mail_from), list(envelope.rcpt_tos), message))
        self.arrived.set()
        return "250 queued"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


StartServer = Callable[..., Inbox]


@pytest.fixture
def smtp_server() -> Iterator[StartServer]:
    """Starts an SMTP server on a port (a free one unless given); stopped after the test."""
    controllers: list[Controller] = []

    def start(port: int | None = None, **smtp_options: Any) -> Inbox:
        inbox = Inbox(port=port or free_port())
        controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port, **smtp_options)
        controller.start()
        controllers.append(controller)
        return inbox

    yield start
    for controller in controllers:
        controller.stop()


# Retries due at once: a test calls send_due again instead of waiting for a backoff.
NOW_AGAIN = SendPolicy(
    retry_base=timedelta(0), retry_max=timedelta(0), give_up_after=timedelta(hours=1)
)


@pytest.fixture
def sessions(tmp_path: Path, database_url: str | None) -> Iterator[sessionmaker[DbSession]]:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def inbox(smtp_server: StartServer) -> Inbox:
    return smtp_server()


def mail_settings(
    data_dir: Path, inbox: Inbox, database_url: str | None = None, **overrides: Any
) -> Settings:
    """The service's settings to mail ``inbox`` at https://judge.example.edu/, its sender
    thread passing every 0.05 s."""
    values: dict[str, Any] = {
        "mailer": "smtp",
        "smtp_port": inbox.port,
        "smtp_from": "judge@example.edu",
        "public_url": "https://judge.example.edu/",
        "mail_send_interval_seconds": 0.05,
    }
    return make_settings(data_dir, database_url, **{**values, **overrides})


@pytest.fixture
def mail_app(tmp_path: Path, inbox: Inbox) -> Iterator[tuple[TestClient, People]]:
    """The service mailing ``inbox`` (its sender thread passing every 0.05 s), and everyone of
    tests/support/people.py."""
    with TestClient(create_app(mail_settings(tmp_path / "data", inbox))) as api:
        yield api, seed_people(api.app.state.sessions)  # type: ignore[attr-defined]
