"""Checking a launch's id_token: the signature against the platform's key set (cached,
fetched again once on an unknown ``kid``), then iss, aud/azp, exp/iat, the nonce of this
login, the deployment, the LTI version and message type. Nothing is written here."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from joserfc.jws import extract_compact

from app.lti import claims as c

HTTP_TIMEOUT_SECONDS = 10.0
KEYSET_TTL_SECONDS = 3600.0
# A forged token with a made-up kid must not make every launch fetch the key set again.
REFETCH_MIN_SECONDS = 10.0
LEEWAY_SECONDS = 60
MAX_AGE_SECONDS = 600
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256"]


class LaunchError(Exception):
    """A launch refused: shown to the person as a page with ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Expected:
    issuer: str
    client_id: str
    nonce: str
    deployments: frozenset[str]


_keysets: dict[str, tuple[float, KeySet]] = {}


async def _fetch(url: str) -> KeySet:
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as client:
            response = await client.get(url)
            response.raise_for_status()
            keys = KeySet.import_key_set(response.json())
    except (httpx.HTTPError, ValueError, JoseError) as exc:
        raise LaunchError(
            502, "keyset_unavailable", f"the LMS's key set did not load ({exc})"
        ) from None
    _keysets[url] = (time.monotonic(), keys)
    return keys


async def platform_keys(url: str, kid: str | None) -> KeySet:
    """The platform's keys, fetched when not cached, stale, or missing ``kid``."""
    cached = _keysets.get(url)
    if cached is None or time.monotonic() - cached[0] > KEYSET_TTL_SECONDS:
        return await _fetch(url)
    fetched_at, keys = cached
    known = {k.kid for k in keys.keys}
    if kid is not None and kid not in known and time.monotonic() - fetched_at > REFETCH_MIN_SECONDS:
        return await _fetch(url)
    return keys


def header_kid(id_token: str) -> str | None:
    try:
        kid = extract_compact(id_token.encode()).protected.get("kid")
    except (JoseError, ValueError) as exc:
        raise LaunchError(
            400, "invalid_token", f"the launch's id_token is malformed ({exc})"
        ) from None
    return kid if isinstance(kid, str) else None


def verify(id_token: str, keys: KeySet, expected: Expected) -> dict[str, Any]:
    """The launch's claims once every check passes; a ``LaunchError`` naming the first that
    fails."""
    try:
        token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
    except (JoseError, ValueError) as exc:
        raise LaunchError(
            401, "bad_signature", f"the launch is not signed by this LMS's keys ({exc})"
        ) from None
    claims = dict(token.claims)
    try:
        jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": expected.issuer},
            aud={"essential": True, "value": expected.client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
        ).validate(claims)
    except (JoseError, ValueError) as exc:
        raise LaunchError(
            401, "invalid_claims", f"the launch's id_token is not valid ({exc})"
        ) from None
    if claims["iat"] < time.time() - MAX_AGE_SECONDS:
        raise LaunchError(401, "invalid_claims", "the launch's id_token is too old")
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    azp = claims.get("azp")
    if (len(audiences) > 1 or azp is not None) and azp != expected.client_id:
        raise LaunchError(401, "invalid_claims", "the launch was issued to another client (azp)")
    if claims.get("nonce") != expected.nonce:
        raise LaunchError(401, "invalid_nonce", "the launch's nonce is not this login's")
    if claims.get(c.DEPLOYMENT_ID) not in expected.deployments:
        raise LaunchError(
            403, "unknown_deployment", "this LMS deployment is not registered with TensorJudge"
        )
    if claims.get(c.VERSION) != c.LTI_VERSION:
        raise LaunchError(400, "invalid_claims", "only LTI 1.3.0 launches are accepted")
    if claims.get(c.MESSAGE_TYPE) not in (c.RESOURCE_LINK_REQUEST, c.DEEP_LINKING_REQUEST):
        raise LaunchError(400, "invalid_claims", "this LTI message type is not supported")
    return claims
