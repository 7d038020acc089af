"""Which reverse proxies are believed: ``GRADER_TRUSTED_PROXIES`` (IPs or CIDRs), empty by default.

A forwarded header (``X-Forwarded-For``, ``X-Forwarded-Proto``, or any other a proxy adds) is
only as true as whoever sent it: a client that reaches the server directly can write any of
them. So the app believes one only when the connection itself comes from a configured proxy,
and nothing at all when none is configured (127.0.0.1 included: a process on the host is not a
proxy just by being local).

The server is started with uvicorn's own proxy handling off (``python -m app serve``): uvicorn
would replace ``request.client`` with the forwarded address, and then nothing could tell a
proxy's headers from a client's. Here ``request.client`` stays the connection's peer, so
``is_trusted_proxy(settings, request.client.host)`` answers "did a configured proxy send this
request?", and ``client_address`` gives the address the proxy saw.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.config import Settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
FORWARDED_SCHEMES = frozenset({"http", "https"})


@lru_cache(maxsize=16)
def _networks(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in proxies)


def is_trusted_proxy(settings: Settings, host: str | None) -> bool:
    """True when ``host`` (a connection's peer address) is one of the configured proxies."""
    if not host or not settings.trusted_proxies:
        return False
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a Unix socket's peer or a test client's made-up name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _networks(tuple(settings.trusted_proxies)))


def _peer(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def client_address(request: Request, settings: Settings) -> str:
    """The address a request is counted under (sign-in throttle, anonymous rate limits): the
    connection's peer, or, when that peer is a trusted proxy, the nearest address in
    ``X-Forwarded-For`` that is not itself a trusted proxy (the entries further left were
    written by the client and prove nothing)."""
    peer = _peer(request)
    if not is_trusted_proxy(settings, peer):
        return peer
    hops = [
        hop.strip()
        for value in request.headers.getlist("x-forwarded-for")
        for hop in value.split(",")
        if hop.strip()
    ]
    for hop in reversed(hops):
        if not is_trusted_proxy(settings, hop):
            return hop[:100]
    return hops[0][:100] if hops else peer


class ForwardedScheme:
    """Takes the scheme from a trusted proxy's ``X-Forwarded-Proto`` (the links the app builds
    from the request's own address then say https behind a TLS proxy); leaves the client
    address alone (see ``client_address``)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client = scope.get("client")
            if client and is_trusted_proxy(self.settings, client[0]):
                for name, value in scope["headers"]:
                    if name == b"x-forwarded-proto":
                        scheme = value.decode("latin-1").split(",")[0].strip().lower()
                        if scheme in FORWARDED_SCHEMES:
                            scope = {**scope, "scheme": scheme}
                        break
        await self.app(scope, receive, send)
