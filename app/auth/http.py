"""What the accounts routes share over HTTP: small capped JSON bodies, the session cookie, and
the cross-site check of the routes that sign in (which have no session, hence no CSRF token
yet).

A cross-site page can make a browser POST a form (urlencoded, multipart or text/plain) without
asking, but not a JSON body: requiring ``application/json`` forces a CORS preflight that this
service never grants. ``Origin`` and ``Sec-Fetch-Site``, when the browser sends them, must say
the request comes from this site.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypeVar
from urllib.parse import urlsplit

from fastapi import Request, Response
from pydantic import BaseModel

from app.auth.sessions import COOKIE
from app.core.bodies import BodyCap, read_model
from app.core.config import Settings
from app.core.errors import ApiError

# Every accounts body is a few short fields (a password is at most 1024 characters), but JSON
# may escape each character as two \uXXXX surrogates (12 bytes): the cap admits every body the
# schemas allow.
ACCOUNTS_BODY_CAP = BodyCap(64 * 1024)
ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})

Model = TypeVar("Model", bound=BaseModel)


async def read_json(request: Request, model: type[Model]) -> Model:
    """The body as ``model``: 415 unless JSON, 413 over the cap, 400 unreadable, 422 invalid."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(
            415, "unsupported_media_type", "send the body as application/json", "Content-Type"
        )
    return await read_model(request, ACCOUNTS_BODY_CAP, model)


def _own_hosts(request: Request, settings: Settings) -> set[str]:
    """The host names this service answers as: the request's Host, a proxy's X-Forwarded-Host
    (a cross-site page cannot set that header without a preflight), and GRADER_PUBLIC_URL."""
    hosts = {request.headers.get("host", "")}
    forwarded = request.headers.get("x-forwarded-host")
    if forwarded:
        hosts.add(forwarded.split(",")[0].strip())
    if settings.public_url:
        hosts.add(urlsplit(settings.public_url).netloc)
    return {h.lower() for h in hosts if h}


def check_same_site(request: Request, settings: Settings) -> None:
    """403 ``cross_site`` when the browser says another site sent this request."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ALLOWED_FETCH_SITES:
        raise ApiError(403, "cross_site", "this request must come from this site's own page")
    origin = request.headers.get("origin")
    if origin is not None:
        host = urlsplit(origin).netloc.lower()
        if origin == "null" or host not in _own_hosts(request, settings):
            raise ApiError(403, "cross_site", "this request must come from this site's own page")


def set_session_cookie(response: Response, secret: str, settings: Settings) -> None:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=int(timedelta(hours=settings.session_hours).total_seconds()),
        path="/",
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
    )


def clear_session_cookie(response: Response, settings: Settings) -> None:
    response.delete_cookie(
        COOKIE, path="/", httponly=True, samesite="lax", secure=settings.secure_cookies
    )
