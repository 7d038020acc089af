"""How one mail leaves: through SMTP (``mailer=smtp``) or into the server log (``mailer=log``,
the default: no mail server is assumed).

A transport either sends, or raises ``Refused`` (the server said 5xx to this mail: trying again
will not help) or ``Deferred`` (down, hanging, 4xx, TLS or login trouble: try again later)."""

from __future__ import annotations

import logging
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from typing import Protocol

from app.core.config import Settings

log = logging.getLogger(__name__)


class Refused(Exception):
    """The server refused this mail for good (a 5xx answer to its sender, recipient or data)."""


class Deferred(Exception):
    """The mail could not be handed over now; the outbox tries again."""


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str
    html: str | None
    # Stable across retries, so a mail sent twice (a crash between the send and its commit)
    # is recognisably the same message.
    message_id: str


class Transport(Protocol):
    def send(self, mail: Mail) -> None: ...


class LogTransport:
    def send(self, mail: Mail) -> None:
        log.warning(
            "mail to %s (GRADER_MAILER=log, not sent): %s\n%s", mail.to, mail.subject, mail.text
        )


def message_of(mail: Mail, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = mail.to
    message["Subject"] = mail.subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = mail.message_id
    message.set_content(mail.text)
    if mail.html is not None:
        message.add_alternative(mail.html, subtype="html")
    return message


def _refused_for_good(exc: smtplib.SMTPException) -> bool:
    """A 5xx to this mail's recipient or content. A 5xx anywhere else (530 STARTTLS required,
    535 login, a refused From) says the deployment's settings are wrong, not the mail: it is
    kept and tried again, so fixing the settings loses nothing."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in exc.recipients.values())
    return isinstance(exc, smtplib.SMTPDataError) and exc.smtp_code >= 500


class SmtpTransport:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def send(self, mail: Mail) -> None:
        s = self.settings
        try:
            with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=s.smtp_timeout_seconds) as smtp:
                if s.smtp_starttls:
                    smtp.starttls(context=ssl.create_default_context(cafile=s.smtp_ca_file))
                if s.smtp_user:
                    smtp.login(s.smtp_user, s.smtp_password or "")
                smtp.send_message(message_of(mail, s.smtp_from))
        except smtplib.SMTPException as exc:
            if isinstance(exc.__context__, TimeoutError):  # smtplib rewords a read timeout
                raise Deferred(_timed_out(s)) from None
            if _refused_for_good(exc):
                raise Refused(_describe(exc)) from None
            raise Deferred(_describe(exc)) from None
        except TimeoutError:
            raise Deferred(_timed_out(s)) from None
        except OSError as exc:  # refused connection, unreachable host, TLS failure
            raise Deferred(f"{type(exc).__name__}: {exc}") from None


def _timed_out(settings: Settings) -> str:
    return f"the SMTP server did not answer within {settings.smtp_timeout_seconds:g} s"


def _describe(exc: smtplib.SMTPException) -> str:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "; ".join(
            f"{code} {reply.decode(errors='replace')}" for code, reply in exc.recipients.values()
        )
    if isinstance(exc, smtplib.SMTPResponseException):
        reply = exc.smtp_error
        text = reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply)
        return f"{exc.smtp_code} {text}"
    return f"{type(exc).__name__}: {exc}"


def transport_of(settings: Settings) -> Transport:
    return SmtpTransport(settings) if settings.mailer == "smtp" else LogTransport()
