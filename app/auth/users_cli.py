"""``python -m app users create|reset-link|list``: accounts from the shell, e.g. the first
administrator of a new deployment."""

from __future__ import annotations

import argparse
import sys

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import AccountError, create_user, find_by_email, issue_reset_link
from app.auth.models import User
from app.auth.passwords import PasswordError, check_new_password, hash_password
from app.auth.tokens import ACCOUNT_ROLES
from app.core.config import Settings


def _settings_and_sessions() -> tuple[Settings, sessionmaker[Session]]:
    from app.auth.cli import _sessions
    from app.core.config import get_settings

    return get_settings(), _sessions()


def _create(args: argparse.Namespace) -> int:
    settings, sessions = _settings_and_sessions()
    password_hash = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        try:
            check_new_password(password, settings.password_min_length)
        except PasswordError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        password_hash = hash_password(password)
    with sessions() as session:
        try:
            user = create_user(session, args.email, args.name, args.role, password_hash)
        except AccountError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        session.commit()
        print(f"Created {user.role} account {user.id} ({user.email}).")
    return 0


def _reset_link(args: argparse.Namespace) -> int:
    settings, sessions = _settings_and_sessions()
    with sessions() as session:
        try:
            user = find_by_email(session, args.email)
        except AccountError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if user is None:
            print(f"error: no account with {args.email}", file=sys.stderr)
            return 1
        secret = issue_reset_link(session, user.id, None)
        session.commit()
    base = (settings.public_url or "").rstrip("/")
    print(f"{base}/reset/{secret}")
    return 0


def _list(args: argparse.Namespace) -> int:
    _, sessions = _settings_and_sessions()
    with sessions() as session:
        users = list(session.scalars(select(User).order_by(User.id)))
    print(f"{'id':>5}  {'role':<10}  {'state':<8}  {'email':<40}  name")
    for user in users:
        state = "disabled" if user.disabled_at is not None else "active"
        print(f"{user.id:>5}  {user.role:<10}  {state:<8}  {user.email or '-':<40}  {user.name}")
    return 0


def add_user_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    users = commands.add_parser("users", help="create and list accounts, issue reset links")
    sub = users.add_subparsers(dest="users_command", required=True)
    create = sub.add_parser("create", help="create an account")
    create.add_argument("--email", required=True)
    create.add_argument("--name", required=True)
    create.add_argument("--role", choices=ACCOUNT_ROLES, default="member")
    create.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of stdin (else: issue a reset link)",
    )
    create.set_defaults(handler=_create)
    link = sub.add_parser("reset-link", help="print a one-use link that sets the password")
    link.add_argument("email")
    link.set_defaults(handler=_reset_link)
    listing = sub.add_parser("list", help="list accounts")
    listing.set_defaults(handler=_list)
