"""Forwarded headers are believed only from GRADER_TRUSTED_PROXIES, empty by default: a client
on 127.0.0.1 that writes X-Forwarded-For is still throttled as 127.0.0.1, under the real
server (`python -m app serve`) and in the app itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.proxies import is_trusted_proxy
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.services import AppProcess, serve

PER_ADDRESS = 2


def _guesses(post: Any) -> list[int]:
    """Wrong sign-ins, each claiming another client address; the statuses."""
    return [
        post(
            "/api/auth/login",
            json={"email": f"guess{i}@example.edu", "password": "wrong!"},
            headers={"X-Forwarded-For": f"203.0.113.{i + 1}"},
        ).status_code
        for i in range(PER_ADDRESS + 1)
    ]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    servers: list[AppProcess] = []

    def start(**env: str) -> str:
        settings = {
            "GRADER_DATA_DIR": str(tmp_path / f"data{len(servers)}"),
            "GRADER_SANDBOX_PRIME": "false",
            "GRADER_WORKERS": "1",
            "GRADER_LOGIN_MAX_FAILURES_PER_ADDRESS": str(PER_ADDRESS),
            **env,
        }
        server, base = serve(settings, tmp_path / f"server{len(servers)}.log")
        servers.append(server)
        return base

    yield start
    for server in servers:
        server.stop()


@pytest.mark.slow
def test_the_server_believes_no_forwarded_address_unless_told(served: Any):
    base = served()
    with httpx.Client(base_url=base, timeout=60) as client:
        assert _guesses(client.post) == [401] * PER_ADDRESS + [429]
    base = served(GRADER_TRUSTED_PROXIES="127.0.0.1")
    with httpx.Client(base_url=base, timeout=60) as client:
        assert _guesses(client.post) == [401] * (PER_ADDRESS + 1)


def _app(tmp_path: Path, peer: str, **overrides: Any) -> TestClient:
    settings = make_settings(
        tmp_path / "data", login_max_failures_per_address=PER_ADDRESS, **overrides
    )
    return TestClient(create_app(settings), client=(peer, 40000))


def test_the_app_counts_the_peer_unless_it_is_a_trusted_proxy(tmp_path: Path):
    with _app(tmp_path, "127.0.0.1") as direct:
        assert _guesses(direct.post) == [401] * PER_ADDRESS + [429]
    with _app(tmp_path / "p", "10.1.2.3", trusted_proxies=["10.0.0.0/8"]) as proxied:
        assert _guesses(proxied.post) == [401] * (PER_ADDRESS + 1)
        # A chain: the client wrote the leftmost entries; the nearest untrusted hop counts.
        for _ in range(PER_ADDRESS):
            proxied.post(
                "/api/auth/login",
                json={"email": "x@example.edu", "password": "wrong!"},
                headers={"X-Forwarded-For": "198.51.100.1, 192.0.2.9, 10.9.9.9"},
            )
        forged = proxied.post(
            "/api/auth/login",
            json={"email": "y@example.edu", "password": "wrong!"},
            headers={"X-Forwarded-For": "198.51.100.77, 192.0.2.9, 10.9.9.9"},
        )
        assert forged.status_code == 429  # still 192.0.2.9, whatever the client prepends


def test_forwarded_scheme_only_from_a_trusted_proxy(tmp_path: Path):
    app = create_app(make_settings(tmp_path / "data", trusted_proxies=["127.0.0.1"]))

    @app.get("/scheme-probe")
    async def probe(request: Request) -> str:
        return request.url.scheme

    proto = {"X-Forwarded-Proto": "https"}
    with TestClient(app, client=("127.0.0.1", 40000)) as trusted:
        assert trusted.get("/scheme-probe", headers=proto).json() == "https"
    with TestClient(app, client=("192.0.2.1", 40000)) as untrusted:
        assert untrusted.get("/scheme-probe", headers=proto).json() == "http"


def test_is_trusted_proxy():
    settings = Settings(trusted_proxies=["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"])
    assert is_trusted_proxy(settings, "10.200.0.1")
    assert is_trusted_proxy(settings, "192.0.2.7")
    assert is_trusted_proxy(settings, "::ffff:10.0.0.1")
    assert is_trusted_proxy(settings, "2001:db8::1")
    assert not is_trusted_proxy(settings, "192.0.2.8")
    assert not is_trusted_proxy(settings, "testclient")
    assert not is_trusted_proxy(settings, None)
    assert not is_trusted_proxy(Settings(), "127.0.0.1")
    with pytest.raises(ValueError, match="not an IP address"):
        Settings(trusted_proxies=["proxy.example.edu"])
