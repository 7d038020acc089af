"""Sending a password-reset link by mail, behind a setting: no mail server is assumed.

``log`` (the default) writes the link to the server log, for an operator to pass on; ``smtp``
sends a plain-text message through the configured server.
"""

from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage
from typing import Protocol

from app.core.config import Settings

log = logging.getLogger(__name__)
SMTP_TIMEOUT_SECONDS = 15.0


class Mailer(Protocol):
    def send(self, to: str, subject: str, body: str) -> None: ...


class LogMailer:
    def send(self, to: str, subject: str, body: str) -> None:
        log.warning("mail to %s (GRADER_MAILER=log, not sent): %s\n%s", to, subject, body)


class SmtpMailer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def send(self, to: str, subject: str, body: str) -> None:
        s = self.settings
        message = EmailMessage()
        message["From"] = s.smtp_from
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=SMTP_TIMEOUT_SECONDS) as smtp:
            if s.smtp_starttls:
                smtp.starttls()
            if s.smtp_user:
                smtp.login(s.smtp_user, s.smtp_password or "")
            smtp.send_message(message)


def mailer_of(settings: Settings) -> Mailer:
    return SmtpMailer(settings) if settings.mailer == "smtp" else LogMailer()


def reset_message(name: str, url: str) -> tuple[str, str]:
    """(subject, body) of the mail that carries a reset link."""
    return (
        "Set your TensorJudge password",
        f"Hello {name},\n\nOpen this link to set your password (it works once, for 7 days):\n"
        f"{url}\n\nIf you did not expect this, ignore this message.\n",
    )
