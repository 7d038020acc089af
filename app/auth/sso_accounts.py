"""Which account a single sign-on identity opens: the one linked to (issuer, subject); else the
account with the same email when the provider says it verified it (the link is then stored);
else a new member account."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.auth.accounts import AccountError, create_user, find_by_email
from app.auth.models import User
from app.auth.oidc import Identity, sso_error


def account_for(session: Session, identity: Identity) -> User:
    """The account (flushed, not committed); an ``ApiError`` for a conflict."""
    linked = session.scalars(
        select(User).where(
            User.oidc_issuer == identity.issuer, User.oidc_subject == identity.subject
        )
    ).first()
    if linked is not None:
        return linked
    email = None
    if identity.email is not None and identity.email_verified:
        try:
            email = identity.email
            found = find_by_email(session, email)
        except AccountError:
            email, found = None, None
        if found is not None:
            if found.oidc_subject is not None:
                raise sso_error(
                    "this email's account is linked to another sign-on identity",
                    "sso_conflict",
                    409,
                )
            found.oidc_issuer, found.oidc_subject = identity.issuer, identity.subject
            return found
    name = (identity.name or email or identity.subject)[:200]
    user = create_user(session, email, name)
    user.oidc_issuer, user.oidc_subject = identity.issuer, identity.subject
    session.flush()
    return user
