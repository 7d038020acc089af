"""``python -m app lti platforms add|list``, ``lti tool``, ``lti keys rotate``, ``lti send``:
registering an LMS and running the score sender from the shell."""

from __future__ import annotations

import argparse
import json
import sys

from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from app.core.errors import ApiError


def _sessions() -> sessionmaker[Session]:
    from app.auth.cli import _sessions as open_sessions

    return open_sessions()


def _add(args: argparse.Namespace) -> int:
    from app.lti.registry import add_platform
    from app.lti.schemas import PlatformIn

    try:
        body = PlatformIn(
            name=args.name,
            issuer=args.issuer,
            client_id=args.client_id,
            deployment_ids=args.deployment,
            auth_login_url=args.login_url,
            auth_token_url=args.token_url,
            keyset_url=args.keyset_url,
            token_audience=args.token_audience,
            trust_email=args.trust_email,
        )
    except ValidationError as exc:
        print(f"error: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 1
    with _sessions()() as session:
        try:
            out = add_platform(session, body)
        except ApiError as exc:
            print(f"error: {exc.body.error.message}", file=sys.stderr)
            return 1
    print(f"Registered platform {out.id}: {out.issuer} (client {out.client_id}).")
    return 0


def _list(args: argparse.Namespace) -> int:
    from app.lti.registry import list_platforms

    with _sessions()() as session:
        for p in list_platforms(session):
            print(f"{p.id}\t{p.name}\t{p.issuer}\t{p.client_id}\t{','.join(p.deployment_ids)}")
    return 0


def _tool(args: argparse.Namespace) -> int:
    from app.core.config import get_settings
    from app.lti.registry import tool_config

    url = args.url or get_settings().public_url
    if not url:
        print("error: pass --url or set GRADER_PUBLIC_URL", file=sys.stderr)
        return 1
    print(json.dumps(tool_config(url).model_dump(), indent=2))
    return 0


def _rotate(args: argparse.Namespace) -> int:
    from app.lti.keys import rotate

    with _sessions()() as session:
        kid = rotate(session)
        session.commit()
    print(f"New signing key {kid}; the old one stays published for a day.")
    return 0


def _send(args: argparse.Namespace) -> int:
    from app.core.config import get_settings
    from app.lti.outbox import send_due
    from app.lti.sender import policy_of

    sent = send_due(_sessions(), policy_of(get_settings()))
    print(f"Sent {sent} score(s).")
    return 0


def add_lti_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    lti = commands.add_parser("lti", help="LTI 1.3: register LMSs, keys, score sending")
    sub = lti.add_subparsers(dest="lti_command", required=True)
    platforms = sub.add_parser("platforms", help="registered LMSs").add_subparsers(
        dest="platform_command", required=True
    )
    add = platforms.add_parser("add", help="register an LMS")
    add.add_argument("--name", required=True)
    add.add_argument("--issuer", required=True, help="the platform's iss")
    add.add_argument("--client-id", required=True, help="TensorJudge's client id at the LMS")
    add.add_argument("--deployment", action="append", required=True, help="a deployment id")
    add.add_argument("--login-url", required=True, help="its OIDC authorization endpoint")
    add.add_argument("--token-url", required=True, help="its OAuth2 token endpoint")
    add.add_argument("--keyset-url", required=True, help="its public keys (JWKS)")
    add.add_argument("--token-audience", default=None, help="if not the token URL")
    add.add_argument(
        "--trust-email",
        action="store_true",
        help="match launches to existing accounts by email (only an LMS with verified emails)",
    )
    add.set_defaults(handler=_add)
    platforms.add_parser("list", help="list them").set_defaults(handler=_list)
    tool = sub.add_parser("tool", help="the values to paste into the LMS")
    tool.add_argument("--url", default=None, help="default: GRADER_PUBLIC_URL")
    tool.set_defaults(handler=_tool)
    keys = sub.add_parser("keys", help="the tool's signing keys").add_subparsers(
        dest="key_command", required=True
    )
    keys.add_parser("rotate", help="a new signing key").set_defaults(handler=_rotate)
    sub.add_parser("send", help="send the scores due now, once").set_defaults(handler=_send)
