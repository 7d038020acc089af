"""Calling a platform's LTI Advantage services (blocking: run from the sender's thread or a
thread pool): an access token for the tool's signed client assertion, line items, scores and
the context's memberships."""

from __future__ import annotations

import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlencode

import httpx
from joserfc import jwt
from sqlalchemy.orm import Session, sessionmaker

from app.lti import claims as c
from app.lti.keys import ALGORITHM, signing_key
from app.lti.models import LtiPlatform

HTTP_TIMEOUT_SECONDS = 10.0
ASSERTION_LIFETIME_SECONDS = 300
MAX_MEMBER_PAGES = 100


class PlatformError(Exception):
    """The platform refused or did not answer; the caller retries later."""


_tokens: dict[tuple[int, str], tuple[float, str]] = {}
_lock = threading.Lock()


def client_assertion(session: Session, platform: LtiPlatform) -> str:
    """The tool's signed JWT proving it is the client (RFC 7523, as LTI Advantage asks)."""
    key = signing_key(session)
    now = int(time.time())
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.token_audience or platform.auth_token_url,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_SECONDS,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, claims, key)


def access_token(
    sessions: sessionmaker[Session], platform: LtiPlatform, scopes: tuple[str, ...]
) -> str:
    """An access token for ``scopes``, reused until a minute before it expires."""
    scope = " ".join(sorted(scopes))
    with _lock:
        cached = _tokens.get((platform.id, scope))
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    with sessions() as session:
        assertion = client_assertion(session, platform)
        session.commit()  # a first signing key may have been made
    try:
        response = httpx.post(
            platform.auth_token_url,
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion,
                "scope": scope,
            },
            timeout=HTTP_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        body = response.json()
        token = str(body["access_token"])
        lifetime = float(body.get("expires_in", 3600))
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise PlatformError(f"token request failed: {exc}") from None
    with _lock:
        _tokens[(platform.id, scope)] = (time.monotonic() + max(0.0, lifetime - 60), token)
    return token


def forget_tokens() -> None:
    with _lock:
        _tokens.clear()


def _call(method: str, url: str, token: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
    try:
        response = httpx.request(
            method, url, headers=headers, timeout=HTTP_TIMEOUT_SECONDS, **kwargs
        )
    except httpx.HTTPError as exc:
        raise PlatformError(f"{method} {url} failed: {exc}") from None
    if response.status_code == 401:
        forget_tokens()
    if response.status_code >= 300:
        raise PlatformError(f"{method} {url}: HTTP {response.status_code}")
    return response


def _with_query(url: str, params: dict[str, str]) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


def line_items(lineitems_url: str, token: str, params: dict[str, str]) -> list[dict[str, Any]]:
    """The context's line items (those ``params`` select), each with its ``id`` (its URL)."""
    url = _with_query(lineitems_url, params) if params else lineitems_url
    response = _call("GET", url, token, headers={"Accept": c.LINEITEMS_MEDIA})
    try:
        found = response.json()
    except ValueError:
        raise PlatformError("the platform's line items are not JSON") from None
    if not isinstance(found, list):
        raise PlatformError("the platform's line items are not a list")
    return [i for i in found if isinstance(i, dict) and isinstance(i.get("id"), str)]


def find_line_item(lineitems_url: str, token: str, resource_id: str) -> str | None:
    """The URL of the line item tagged with ``resource_id``, if the platform has one."""
    for item in line_items(lineitems_url, token, {"resource_id": resource_id}):
        if item.get("resourceId") == resource_id:
            return str(item["id"])
    return None


def create_line_item(
    lineitems_url: str, token: str, resource_id: str, label: str, maximum: float
) -> str:
    response = _call(
        "POST",
        lineitems_url,
        token,
        json={
            "scoreMaximum": maximum,
            "label": label,
            "resourceId": resource_id,
            "tag": "tensorjudge",
        },
        headers={"Content-Type": c.LINEITEM_MEDIA, "Accept": c.LINEITEM_MEDIA},
    )
    url = response.json().get("id")
    if not isinstance(url, str):
        raise PlatformError("the platform made a line item without an id")
    return url


def post_score(line_item_url: str, token: str, score: dict[str, Any]) -> None:
    """POSTs to the line item's ``/scores`` (its query string kept, as the spec says)."""
    base, _, query = line_item_url.partition("?")
    url = f"{base.rstrip('/')}/scores" + (f"?{query}" if query else "")
    _call(
        "POST",
        url,
        token,
        content=_json(score),
        headers={"Content-Type": c.SCORE_MEDIA},
    )


def memberships(url: str, token: str) -> list[dict[str, Any]]:
    """Every member of the context, following the ``Link: rel="next"`` pages."""
    members: list[dict[str, Any]] = []
    next_url: str | None = url
    for _ in range(MAX_MEMBER_PAGES):
        if next_url is None:
            break
        response = _call("GET", next_url, token, headers={"Accept": c.MEMBERSHIPS_MEDIA})
        found = response.json().get("members", [])
        members.extend(m for m in found if isinstance(m, dict))
        link = response.links.get("next")
        next_url = link.get("url") if link else None
    return members


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
