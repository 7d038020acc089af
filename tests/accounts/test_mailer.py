"""The SMTP mailer against a real SMTP conversation: a minimal SMTP server on 127.0.0.1
(aiosmtpd is not installed in the shared environment, so the server is this file's own)."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from app.auth.mailer import LogMailer, SmtpMailer, mailer_of, reset_message
from app.core.config import Settings


class _Smtp(socketserver.StreamRequestHandler):
    received: ClassVar[list[tuple[str, list[str], str]]] = []

    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        self._say("220 localhost test SMTP")
        sender, rcpts = "", []
        while True:
            line = self.rfile.readline().decode().rstrip("\r\n")
            verb = line[:4].upper()
            if verb in ("EHLO", "HELO"):
                self._say("250 localhost")
            elif verb == "MAIL":
                sender = line.split(":", 1)[1].strip()
                self._say("250 OK")
            elif verb == "RCPT":
                rcpts.append(line.split(":", 1)[1].strip())
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 go on")
                data = []
                while (part := self.rfile.readline().decode()) not in (".\r\n", ""):
                    data.append(part)
                self.received.append((sender, rcpts, "".join(data)))
                self._say("250 queued")
            elif verb == "QUIT" or not line:
                self._say("221 bye")
                return
            else:
                self._say("250 OK")


@pytest.fixture
def smtp_port() -> Iterator[int]:
    _Smtp.received = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Smtp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_smtp_mailer_sends_the_link(smtp_port: int):
    settings = Settings(
        mailer="smtp", smtp_host="127.0.0.1", smtp_port=smtp_port, smtp_from="judge@example.edu"
    )
    mailer = mailer_of(settings)
    assert isinstance(mailer, SmtpMailer)
    subject, body = reset_message("Ada", "https://judge.example.edu/reset/abc")
    mailer.send("ada@example.edu", subject, body)
    [(sender, rcpts, data)] = _Smtp.received
    assert sender == "<judge@example.edu>" and rcpts == ["<ada@example.edu>"]
    assert "Subject: Set your TensorJudge password" in data
    assert "https://judge.example.edu/reset/abc" in data


def test_log_mailer_is_the_default():
    assert isinstance(mailer_of(Settings()), LogMailer)
