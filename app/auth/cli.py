"""``python -m app tokens create|list|revoke``."""

from __future__ import annotations

import argparse
import sys

from sqlalchemy.orm import Session, sessionmaker

from app.auth.tokens import ROLES, TokenError, create_token, list_tokens, revoke_token


def _sessions() -> sessionmaker[Session]:
    from app.core.config import get_settings
    from app.db.engine import make_engine, make_sessionmaker
    from app.db.migrate import upgrade

    engine = make_engine(get_settings())
    upgrade(engine)
    return make_sessionmaker(engine)


def _create(args: argparse.Namespace) -> int:
    with _sessions()() as session:
        try:
            row, secret = create_token(session, args.name, args.role)
        except TokenError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        session.commit()
    print(f"Created {args.role} token {row.id} ({row.name}). It is shown only this once:")
    print(secret)
    return 0


def _list(args: argparse.Namespace) -> int:
    with _sessions()() as session:
        rows = list_tokens(session)
    print(f"{'id':>4}  {'role':<10}  {'state':<7}  {'created (UTC)':<19}  name")
    for row, user in rows:
        state = "revoked" if row.revoked_at is not None else "active"
        created = row.created_at.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{row.id:>4}  {user.role:<10}  {state:<7}  {created:<19}  {row.name}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    token_id = int(args.token) if args.token.isdigit() else None
    with _sessions()() as session:
        done = revoke_token(
            session, token_id=token_id, name=None if token_id is not None else args.token
        )
        session.commit()
    if not done:
        print(f"error: no active token {args.token!r}", file=sys.stderr)
        return 1
    print(f"Revoked token {args.token}.")
    return 0


def add_token_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    tokens = commands.add_parser("tokens", help="create, list and revoke API tokens")
    sub = tokens.add_subparsers(dest="tokens_command", required=True)
    create = sub.add_parser("create", help="create a token and print it once")
    create.add_argument("--role", choices=ROLES, required=True)
    create.add_argument("--name", required=True, help="a unique label, e.g. the person's name")
    create.set_defaults(handler=_create)
    listing = sub.add_parser("list", help="list tokens (never their secrets)")
    listing.set_defaults(handler=_list)
    revoke = sub.add_parser("revoke", help="revoke a token by id or name")
    revoke.add_argument("token", help="the id or the name from `tokens list`")
    revoke.set_defaults(handler=_revoke)
