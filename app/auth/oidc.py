"""OpenID Connect single sign-on (authorization code flow with PKCE, state and nonce), through
authlib's OAuth2 client; the id_token's signature is checked against the provider's JWKS with
joserfc (authlib's JOSE successor), and its issuer, audience, expiry and nonce with it.

The round trip's secrets live in the database (``OidcLogin``): a state is accepted once, only
from the browser holding the short-lived cookie set when it started, and only while fresh.
"""

from __future__ import annotations

import secrets
import time
import warnings
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from app.auth.models import OidcLogin
from app.auth.tokens import digest
from app.core.config import Settings
from app.core.errors import ApiError
from app.db.base import utcnow

with warnings.catch_warnings():
    # authlib warns on importing its httpx integration that a rename is coming; the client
    # itself is current. Its own module registers an "always" filter when first imported,
    # so it is imported before this "ignore" goes in front of it.
    import authlib.deprecate

    warnings.simplefilter("ignore", authlib.deprecate.AuthlibDeprecationWarning)
    from authlib.integrations.httpx_client import AsyncOAuth2Client

BROWSER_COOKIE = "tj_oidc"
COOKIE_PATH = "/api/auth/oidc"
LOGIN_LIFETIME = timedelta(minutes=10)
METADATA_TTL_SECONDS = 3600.0
HTTP_TIMEOUT_SECONDS = 10.0
SCOPE = "openid email profile"
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


@dataclass(frozen=True)
class Identity:
    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None


_cache: dict[str, tuple[float, Provider, KeySet]] = {}


def sso_error(message: str, code: str = "sso_failed", status: int = 400) -> ApiError:
    return ApiError(status, code, message)


def _issuer(settings: Settings) -> str:
    assert settings.oidc_issuer is not None
    return settings.oidc_issuer.rstrip("/")


async def _fetch_json(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        response = await client.get(url)
        response.raise_for_status()
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise sso_error(f"the sign-on provider did not answer ({exc})", status=502) from None
    if not isinstance(data, dict):
        raise sso_error("the sign-on provider's answer is not a JSON object", status=502)
    return data


async def provider(settings: Settings, refresh: bool = False) -> tuple[Provider, KeySet]:
    """The provider's endpoints and signing keys, from its discovery document (cached)."""
    issuer = _issuer(settings)
    cached = _cache.get(issuer)
    if cached is not None and not refresh and time.monotonic() - cached[0] < METADATA_TTL_SECONDS:
        return cached[1], cached[2]
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as client:
        meta = await _fetch_json(client, f"{issuer}/.well-known/openid-configuration")
        if str(meta.get("issuer", "")).rstrip("/") != issuer:
            raise sso_error("the provider's discovery document names another issuer", status=502)
        try:
            found = Provider(
                issuer=issuer,
                authorization_endpoint=str(meta["authorization_endpoint"]),
                token_endpoint=str(meta["token_endpoint"]),
                jwks_uri=str(meta["jwks_uri"]),
            )
        except KeyError as exc:
            raise sso_error(f"the provider's discovery lacks {exc}", status=502) from None
        keys = KeySet.import_key_set(await _fetch_json(client, found.jwks_uri))  # type: ignore[arg-type]
    _cache[issuer] = (time.monotonic(), found, keys)
    return found, keys


def _client(settings: Settings, redirect_uri: str) -> AsyncOAuth2Client:
    return AsyncOAuth2Client(
        client_id=settings.oidc_client_id,
        client_secret=settings.oidc_client_secret,
        scope=SCOPE,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        timeout=HTTP_TIMEOUT_SECONDS,
    )


def safe_next(path: str | None) -> str:
    """Only a path of this site: never another host (``//evil``, ``/\\evil``, a scheme)."""
    if not path or not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    # Browsers drop tabs and newlines from URLs ("/\t/evil" becomes "//evil"): no control
    # characters, spaces or backslashes at all.
    if any(ord(c) < 0x21 or c in "\\\x7f" for c in path) or len(path) > 500:
        return "/"
    return path


def begin(
    session: Session, settings: Settings, metadata: Provider, redirect_uri: str, next_path: str
) -> tuple[str, str]:
    """Records a new round trip: (the provider URL to send the browser to, the browser
    cookie's secret). The caller commits."""
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64)
    browser = secrets.token_urlsafe(32)
    now = utcnow()
    session.execute(delete(OidcLogin).where(OidcLogin.expires_at <= now))
    session.add(
        OidcLogin(
            id=digest(state),
            browser_sha256=digest(browser),
            nonce=nonce,
            code_verifier=verifier,
            next_path=safe_next(next_path),
            created_at=now,
            expires_at=now + LOGIN_LIFETIME,
        )
    )
    url, _ = _client(settings, redirect_uri).create_authorization_url(
        metadata.authorization_endpoint, state=state, nonce=nonce, code_verifier=verifier
    )
    return url, browser


def claim(session: Session, state: str, browser: str | None) -> OidcLogin:
    """The round trip this callback finishes, marked used (committed): refused when the state
    is unknown, used, expired, or was started by another browser."""
    row = session.get(OidcLogin, digest(state))
    now = utcnow()
    if row is None or browser is None or row.browser_sha256 != digest(browser):
        raise sso_error("this sign-on answer does not belong to this browser", "invalid_state")
    if row.expires_at <= now:
        raise sso_error("this sign-on took too long; start again", "invalid_state")
    done = session.execute(
        update(OidcLogin)
        .where(OidcLogin.id == row.id, OidcLogin.used_at.is_(None))
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise sso_error("this sign-on answer was already used", "invalid_state")
    session.commit()
    return row


def verify_id_token(
    id_token: str, keys: KeySet, issuer: str, client_id: str, nonce: str
) -> dict[str, Any]:
    """The id_token's claims once its signature (one of ``keys``), issuer, audience, expiry
    and nonce are right; an ``ApiError`` otherwise."""
    try:
        token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
        jwt.JWTClaimsRegistry(
            leeway=60,
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": client_id},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        ).validate(token.claims)
    except (JoseError, ValueError) as exc:
        raise sso_error(f"the sign-on provider's id_token is not valid ({exc})") from None
    claims = dict(token.claims)
    azp = claims.get("azp")
    if isinstance(claims.get("aud"), list) and len(claims["aud"]) > 1 and azp != client_id:
        raise sso_error("the id_token was issued to another client")
    return claims


async def finish(settings: Settings, row: OidcLogin, code: str, redirect_uri: str) -> Identity:
    """Exchanges the code (with the PKCE verifier) and checks the id_token."""
    metadata, keys = await provider(settings)
    async with _client(settings, redirect_uri) as client:
        try:
            token = await client.fetch_token(
                metadata.token_endpoint,
                code=code,
                code_verifier=row.code_verifier,
                grant_type="authorization_code",
            )
        except Exception as exc:  # authlib raises its own OAuth errors and httpx's
            raise sso_error(f"the sign-on provider refused the code ({exc})") from None
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise sso_error("the sign-on provider sent no id_token")
    assert settings.oidc_client_id is not None
    try:
        claims = verify_id_token(
            id_token, keys, metadata.issuer, settings.oidc_client_id, row.nonce
        )
    except ApiError:
        # The provider may have rotated its keys since they were cached: fetch them once more.
        metadata, keys = await provider(settings, refresh=True)
        claims = verify_id_token(
            id_token, keys, metadata.issuer, settings.oidc_client_id, row.nonce
        )
    email = claims.get("email")
    name = claims.get("name")
    return Identity(
        issuer=metadata.issuer,
        subject=str(claims["sub"]),
        email=email if isinstance(email, str) else None,
        email_verified=claims.get("email_verified") is True,
        name=name if isinstance(name, str) else None,
    )
