"""The mail outbox against a real SMTP server (aiosmtpd on 127.0.0.1): delivered with its
plain-text and HTML bodies, over STARTTLS with a self-signed certificate, refused (5xx: failed
at once), deferred (4xx, a server down then up, a server that hangs: tried again, nothing lost,
nothing sent twice), and a mail written by one process and sent by the next."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.core.retry import SendPolicy
from app.db.engine import make_engine, make_sessionmaker
from app.mail.models import MailOut
from app.mail.outbox import FAILED, PENDING, SENT, Message, enqueue, send_due
from app.mail.transport import SmtpTransport, Transport
from tests.instructors.conftest import make_settings
from tests.mail.conftest import NOW_AGAIN, StartServer, free_port

FROM = "judge@example.edu"
MESSAGE = Message(
    subject="Set your TensorJudge password",
    text="Hello Ada,\nhttps://judge.example.edu/reset/abc\n",
    html='<p>Hello Ada,</p><p><a href="https://judge.example.edu/reset/abc">set</a></p>',
)


def smtp(port: int, **overrides: object) -> Transport:
    return SmtpTransport(
        make_settings(
            Path("/nonexistent"),
            mailer="smtp",
            smtp_host="127.0.0.1",
            smtp_port=port,
            smtp_from=FROM,
            **overrides,
        )
    )


def queue(sessions: sessionmaker[Session], to: str = "ada@example.edu") -> int:
    with sessions() as session:
        row = enqueue(session, "reset", to, MESSAGE)
        session.commit()
        return row.id


def row_of(sessions: sessionmaker[Session], row_id: int) -> MailOut:
    with sessions() as session:
        row = session.get(MailOut, row_id)
        assert row is not None
        session.expunge(row)
        return row


def test_a_mail_is_delivered_with_text_and_html(sessions, smtp_server: StartServer) -> None:
    inbox = smtp_server()
    row_id = queue(sessions)
    assert send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN) == 1
    [(sender, rcpts, message)] = inbox.mails
    assert sender == FROM and rcpts == ["ada@example.edu"]
    assert message["Subject"] == MESSAGE.subject
    # Derived from the row: the same on a retry after a crash.
    assert message["Message-ID"].startswith(f"<tj-mail-{row_id}.")
    assert message["Message-ID"].endswith("@example.edu>")
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    assert "https://judge.example.edu/reset/abc" in text.get_content()
    assert '<a href="https://judge.example.edu/reset/abc">' in html.get_content()
    row = row_of(sessions, row_id)
    assert (row.status, row.attempts, row.last_error) == (SENT, 1, None)
    # The link lives on in the mailbox only.
    assert row.text_body is None and row.html_body is None
    # Sent is sent: the next pass has nothing to do.
    assert send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN) == 0
    assert len(inbox.mails) == 1


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "smtp.pem", directory / "smtp.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_starttls_with_the_servers_own_certificate(
    sessions, smtp_server: StartServer, tmp_path: Path
) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    # The server takes nothing before STARTTLS.
    inbox = smtp_server(tls_context=tls, require_starttls=True)

    plain = queue(sessions)
    send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN)
    assert row_of(sessions, plain).status == PENDING and inbox.mails == []

    # STARTTLS against a certificate nobody vouched for: refused by the client, kept.
    unverified = smtp(inbox.port, smtp_starttls=True)
    send_due(sessions, unverified, FROM, NOW_AGAIN)
    row = row_of(sessions, plain)
    assert row.status == PENDING and "CERTIFICATE_VERIFY_FAILED" in (row.last_error or "")
    assert inbox.mails == []

    trusting = smtp(inbox.port, smtp_starttls=True, smtp_ca_file=str(cert_file))
    assert send_due(sessions, trusting, FROM, NOW_AGAIN) == 1
    assert [to for _, to, _ in inbox.mails] == [["ada@example.edu"]]
    assert row_of(sessions, plain).status == SENT


def test_a_refusing_server_marks_the_mail_failed(sessions, smtp_server: StartServer) -> None:
    inbox = smtp_server()
    inbox.refuse_rcpt = "550 5.1.1 no such mailbox"
    row_id = queue(sessions, "nobody@example.edu")
    assert send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN) == 0
    row = row_of(sessions, row_id)
    assert row.status == FAILED and row.attempts == 1
    assert row.last_error is not None and "550" in row.last_error
    assert "no such mailbox" in row.last_error
    assert row.text_body is None
    # Failed for good: not tried again.
    inbox.refuse_rcpt = None
    assert send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN) == 0
    assert inbox.mails == []


def test_a_4xx_answer_is_tried_again(sessions, smtp_server: StartServer) -> None:
    inbox = smtp_server()
    inbox.refuse_data = "451 4.3.0 try again later"
    row_id = queue(sessions)
    send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN)
    row = row_of(sessions, row_id)
    assert row.status == PENDING and "451" in (row.last_error or "")
    inbox.refuse_data = None
    assert send_due(sessions, smtp(inbox.port), FROM, NOW_AGAIN) == 1
    assert len(inbox.mails) == 1 and row_of(sessions, row_id).attempts == 2


def test_a_server_down_then_up_after_a_restart_gets_every_mail_once(
    tmp_path: Path, database_url: str | None, smtp_server: StartServer
) -> None:
    settings = make_settings(tmp_path / "data", database_url)
    port = free_port()  # nothing listens there yet
    first = make_engine(settings)
    from app.db.migrate import upgrade

    upgrade(first)
    sessions = make_sessionmaker(first)
    ids = [queue(sessions, f"s{i}@example.edu") for i in range(3)]
    backoff = SendPolicy(
        retry_base=timedelta(hours=1), retry_max=timedelta(hours=2), give_up_after=timedelta(days=3)
    )
    assert send_due(sessions, smtp(port), FROM, backoff) == 0
    for row_id in ids:
        row = row_of(sessions, row_id)
        assert row.status == PENDING and row.attempts == 1
        assert "ConnectionRefusedError" in (row.last_error or "")
        # Backed off: not due again for an hour.
        assert row.next_attempt_at > row.created_at + timedelta(minutes=59)
    assert send_due(sessions, smtp(port), FROM, backoff) == 0  # nothing due yet
    first.dispose()  # the process ends

    inbox = smtp_server(port=port)
    second = make_engine(settings)  # the next process, the server now up
    later = make_sessionmaker(second)
    with later() as session:  # an hour later
        for row in session.scalars(select(MailOut)):
            row.next_attempt_at = row.created_at
        session.commit()
    assert send_due(later, smtp(port), FROM, backoff) == 3
    assert sorted(to[0] for _, to, _ in inbox.mails) == [f"s{i}@example.edu" for i in range(3)]
    assert send_due(later, smtp(port), FROM, backoff) == 0
    assert len(inbox.mails) == 3
    assert {row_of(later, i).status for i in ids} == {SENT}
    second.dispose()


@pytest.fixture
def hanging_port() -> Iterator[int]:
    """Accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_hanging_server_times_out_and_the_mail_waits(sessions, hanging_port: int) -> None:
    row_id = queue(sessions)
    assert send_due(sessions, smtp(hanging_port, smtp_timeout_seconds=0.5), FROM, NOW_AGAIN) == 0
    row = row_of(sessions, row_id)
    assert row.status == PENDING and row.attempts == 1
    assert "did not answer within 0.5 s" in (row.last_error or "")
    assert row.text_body == MESSAGE.text  # kept for the next try


def test_a_mail_never_taken_is_given_up(sessions) -> None:
    row_id = queue(sessions)
    never = SendPolicy(retry_base=timedelta(0), retry_max=timedelta(0), give_up_after=timedelta(0))
    send_due(sessions, smtp(free_port()), FROM, never)
    row = row_of(sessions, row_id)
    assert row.status == FAILED and (row.last_error or "").startswith("gave up:")


def test_two_senders_never_send_one_mail_twice(sessions, smtp_server: StartServer) -> None:
    inbox = smtp_server()
    ids = [queue(sessions, f"s{i}@example.edu") for i in range(20)]
    transport = smtp(inbox.port)
    totals: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: totals.append(send_due(sessions, transport, FROM, NOW_AGAIN))
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(totals) == 20 and len(inbox.mails) == 20
    assert {row_of(sessions, i).attempts for i in ids} == {1}
