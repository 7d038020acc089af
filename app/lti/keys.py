"""The tool's RSA signing keys: made on first need (a platform registered, the JWKS URL
asked), rotated on demand, published at the JWKS URL. A retired key stays published for
``RETIRED_KEPT`` after it stopped signing: every token it signed (client assertions and
deep-linking answers live minutes) has expired by then."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from joserfc.jwk import RSAKey
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.lti.models import LtiKey

ALGORITHM = "RS256"
KEY_BITS = 2048
RETIRED_KEPT = timedelta(days=1)


def _params(kid: str) -> Any:
    return {"kid": kid, "use": "sig", "alg": ALGORITHM}


def _load(row: LtiKey) -> RSAKey:
    return RSAKey.import_key(row.private_pem, parameters=_params(row.kid))


def _new(session: Session) -> LtiKey:
    kid = secrets.token_urlsafe(12)
    key = RSAKey.generate_key(KEY_BITS, parameters=_params(kid))
    row = LtiKey(kid=kid, private_pem=key.as_pem(private=True).decode(), created_at=utcnow())
    session.add(row)
    session.flush()
    return row


def _current(session: Session) -> LtiKey | None:
    return session.scalars(
        select(LtiKey).where(LtiKey.retired_at.is_(None)).order_by(LtiKey.created_at.desc())
    ).first()


def ensure_key(session: Session) -> str:
    """The signing key's kid, made when there is none. The caller commits."""
    row = _current(session)
    return (row or _new(session)).kid


def rotate(session: Session) -> str:
    """A new signing key; the old ones retire (still published for a while). Caller commits."""
    now = utcnow()
    for row in session.scalars(select(LtiKey).where(LtiKey.retired_at.is_(None))):
        row.retired_at = now
    session.execute(delete(LtiKey).where(LtiKey.retired_at < now - RETIRED_KEPT))
    return _new(session).kid


def signing_key(session: Session) -> RSAKey:
    """The key that signs now (made if missing: the caller commits)."""
    row = _current(session) or _new(session)
    return _load(row)


def public_jwks(session: Session) -> dict[str, Any]:
    """The published key set: the signing key and the recently retired ones, public parts."""
    since = utcnow() - RETIRED_KEPT
    rows = session.scalars(
        select(LtiKey)
        .where((LtiKey.retired_at.is_(None)) | (LtiKey.retired_at >= since))
        .order_by(LtiKey.created_at.desc())
    ).all()
    return {"keys": [_load(r).as_dict(private=False) for r in rows]}
