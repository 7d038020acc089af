"""Rows of the accounts tables as the API shows them."""

from __future__ import annotations

from app.auth.models import ApiToken, User
from app.auth.schemas import TokenOut, UserAdminOut


def token_out(row: ApiToken) -> TokenOut:
    return TokenOut(
        id=row.id,
        name=row.name,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )


def user_admin_out(user: User) -> UserAdminOut:
    return UserAdminOut(
        id=user.id,
        name=user.name,
        email=user.email,
        role=user.role,
        created_at=user.created_at,
        disabled=user.disabled_at is not None,
        has_password=user.password_hash is not None,
        single_sign_on=user.oidc_subject is not None,
    )
