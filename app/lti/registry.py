"""Registered platforms: add, list, find; and the tool's own values an admin gives the LMS."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.core.errors import ApiError
from app.lti import claims as c
from app.lti.keys import ensure_key
from app.lti.models import LtiDeployment, LtiPlatform
from app.lti.schemas import PlatformIn, PlatformOut, PlatformPatch, ToolConfig

TITLE = "TensorJudge"


def tool_config(base_url: str) -> ToolConfig:
    base = base_url.rstrip("/")
    launch = f"{base}/lti/launch"
    return ToolConfig(
        title=TITLE,
        login_initiation_url=f"{base}/lti/login",
        launch_url=launch,
        redirect_uris=[launch],
        deep_linking_url=launch,
        jwks_url=f"{base}/lti/jwks",
        scopes=[c.SCOPE_LINEITEM, c.SCOPE_SCORE, c.SCOPE_MEMBERSHIPS],
        custom_parameters={},
    )


def deployments_of(session: Session, platform_id: int) -> list[str]:
    return list(
        session.scalars(
            select(LtiDeployment.deployment_id)
            .where(LtiDeployment.platform_id == platform_id)
            .order_by(LtiDeployment.id)
        )
    )


def platform_out(session: Session, row: LtiPlatform) -> PlatformOut:
    return PlatformOut(
        id=row.id,
        name=row.name,
        issuer=row.issuer,
        client_id=row.client_id,
        deployment_ids=deployments_of(session, row.id),
        auth_login_url=row.auth_login_url,
        auth_token_url=row.auth_token_url,
        keyset_url=row.keyset_url,
        token_audience=row.token_audience,
        trust_email=row.trust_email,
        created_at=row.created_at,
    )


def _url(value: object) -> str:
    # pydantic normalises a bare origin to end in "/"; an issuer must match the token's exactly.
    text = str(value)
    return text[:-1] if text.endswith("/") and text.count("/") == 3 else text


def add_platform(session: Session, body: PlatformIn) -> PlatformOut:
    """Registers a platform (committed); 409 when its issuer and client id are registered."""
    row = LtiPlatform(
        name=body.name,
        issuer=_url(body.issuer),
        client_id=body.client_id,
        auth_login_url=str(body.auth_login_url),
        auth_token_url=str(body.auth_token_url),
        keyset_url=str(body.keyset_url),
        token_audience=None if body.token_audience is None else str(body.token_audience),
        trust_email=body.trust_email,
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise ApiError(
            409, "platform_exists", "this issuer and client id are already registered"
        ) from None
    for deployment in dict.fromkeys(body.deployment_ids):
        session.add(LtiDeployment(platform_id=row.id, deployment_id=deployment))
    ensure_key(session)  # the tool signs for this platform from now on
    session.commit()
    return platform_out(session, row)


def set_trust(session: Session, platform_id: int, body: PlatformPatch) -> PlatformOut:
    """Changes whether the platform's emails match existing accounts (committed)."""
    row = get_platform(session, platform_id)
    row.trust_email = body.trust_email
    session.commit()
    return platform_out(session, row)


def list_platforms(session: Session) -> list[PlatformOut]:
    rows = session.scalars(select(LtiPlatform).order_by(LtiPlatform.id)).all()
    return [platform_out(session, r) for r in rows]


def get_platform(session: Session, platform_id: int) -> LtiPlatform:
    row = session.get(LtiPlatform, platform_id)
    if row is None:
        raise ApiError(404, "not_found", f"no LTI platform {platform_id}")
    return row


def find_platform(session: Session, issuer: str, client_id: str | None) -> LtiPlatform | None:
    """The platform of a login initiation: by issuer and client id (the client id may be left
    out when the issuer has a single registration)."""
    stmt = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id is not None:
        stmt = stmt.where(LtiPlatform.client_id == client_id)
    rows = session.scalars(stmt.limit(2)).all()
    return rows[0] if len(rows) == 1 else None
