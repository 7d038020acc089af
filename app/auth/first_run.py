"""The first administrator, without a shell: at start-up, when no administrator exists, either
the one the environment names (GRADER_INITIAL_ADMIN_EMAIL, for unattended deployments) or a
one-time setup link printed on the console, like a notebook server's token.

The link's secret is kept only as its SHA-256, in ``<data dir>/setup-link.json`` (owner-only),
with its expiry. A start-up writes a new one (a link printed earlier stops working); the link is
used up by renaming that file, which one request alone can do, and it creates an administrator
only while none exists, checked in the same transaction."""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import sys
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import (
    AccountError,
    create_user,
    find_by_email,
    issue_reset_link,
    normalize_email,
)
from app.auth.models import User
from app.auth.passwords import check_new_password, hash_password
from app.auth.tokens import digest
from app.core.config import Settings
from app.db.base import utcnow

log = logging.getLogger(__name__)

SETUP_LINK_LIFETIME = timedelta(hours=24)
SETUP_FILE = "setup-link.json"


class SetupError(Exception):
    """The setup link is unknown, used or expired, or an administrator exists already."""


def _file(settings: Settings) -> Path:
    return Path(settings.data_dir) / SETUP_FILE


def has_admin(session: Session) -> bool:
    return session.scalar(select(User.id).where(User.role == "admin").limit(1)) is not None


def base_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"http://{host}:{settings.port}"


def new_setup_link(settings: Settings) -> str:
    """A fresh one-time link (the previous one stops working); the path and secret."""
    secret = secrets.token_urlsafe(32)
    path = _file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"sha256": digest(secret), "expires_at": (utcnow() + SETUP_LINK_LIFETIME).isoformat()}
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(record, out)
    os.replace(temporary, path)
    return f"/setup/{secret}"


def check_setup_secret(settings: Settings, secret: str) -> None:
    """``SetupError`` unless ``secret`` is the live link's (no argon2 work before this)."""
    try:
        record = json.loads(_file(settings).read_text())
    except (FileNotFoundError, ValueError):
        raise SetupError("this setup link is unknown or already used") from None
    if not hmac.compare_digest(str(record.get("sha256", "")), digest(secret)):
        raise SetupError("this setup link is unknown or already used")
    if datetime.fromisoformat(str(record["expires_at"])) < utcnow():
        raise SetupError("this setup link has expired: restart the server for a new one")


def use_setup_link(
    settings: Settings, session: Session, secret: str, email: str, name: str, password_hash: str
) -> User:
    """Uses the link up and creates the first administrator; the caller commits."""
    check_setup_secret(settings, secret)
    email = normalize_email(email)  # a typo costs nothing: the link still works
    if has_admin(session):
        raise SetupError("an administrator exists already: sign in")
    path = _file(settings)
    try:  # one request alone can move the file: the link works once
        os.replace(path, path.with_suffix(f".used-{secrets.token_hex(8)}"))
    except FileNotFoundError:
        raise SetupError("this setup link is unknown or already used") from None
    return create_user(session, email, name, "admin", password_hash)


def _initial_admin(settings: Settings, session: Session, email: str) -> str | None:
    """The administrator GRADER_INITIAL_ADMIN_EMAIL names; a reset link (to print) when no
    password comes with it."""
    password = settings.initial_admin_password
    password_hash = None
    if password is not None:
        check_new_password(password, settings.password_min_length)
        password_hash = hash_password(password)
    user = find_by_email(session, email)
    if user is None:
        user = create_user(session, email, settings.initial_admin_name, "admin", password_hash)
    else:  # the operator's own account: made administrator, never duplicated
        user.role = "admin"
        if user.password_hash is None:
            user.password_hash = password_hash
    if user.password_hash is not None:
        return None
    return f"/reset/{issue_reset_link(session, user.id, None)}"


def prepare_first_run(settings: Settings, sessions: sessionmaker[Session]) -> str | None:
    """Called at start-up: the message to print (None when an administrator exists)."""
    with sessions() as session:
        if has_admin(session):
            return None
        email = settings.initial_admin_email
        if email is not None:
            try:
                path = _initial_admin(settings, session, email)
            except (AccountError, ValueError) as exc:
                raise SystemExit(f"GRADER_INITIAL_ADMIN_EMAIL/PASSWORD: {exc}") from None
            session.commit()
            if path is None:
                return None
            return (
                f"The administrator {email} was created without a password. Set it once, "
                f"within 7 days, at:\n\n    {base_url(settings)}{path}\n"
            )
    link = new_setup_link(settings)
    return (
        "No administrator exists yet. Open this link (it works once, for 24 hours) to create "
        f"the first one:\n\n    {base_url(settings)}{link}\n"
    )


def announce(message: str) -> None:
    # On the console, not only in the log: whoever ran `make run` is reading it.
    print(f"\n{message}", file=sys.stderr, flush=True)
