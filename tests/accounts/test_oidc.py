"""Single sign-on against a real local OpenID provider (oidc-provider-mock, a WSGI server on
127.0.0.1): the full round trip through real HTTP, and the refusals (forged state, replayed
callback, another browser, wrong issuer, audience, nonce or signing key)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import oidc_provider_mock
import pytest
import werkzeug.serving
from fastapi.testclient import TestClient

from app.auth.models import User
from app.auth.oidc import BROWSER_COOKIE, ApiError, verify_id_token
from app.auth.sessions import COOKIE
from tests.accounts.conftest import MakeClient, error_of
from tests.support.people import People, seed_people

CLIENT_ID = "tensorjudge"


@pytest.fixture
def idp() -> Iterator[str]:
    """A real OpenID provider on 127.0.0.1 (its issuer URL)."""
    server = werkzeug.serving.make_server(
        "127.0.0.1", 0, oidc_provider_mock.app(require_nonce=True), threaded=True
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


def _set_user(issuer: str, sub: str, **claims: object) -> None:
    r = httpx.put(f"{issuer}/users/{sub}", json=claims)
    assert r.status_code == 204


def _authorize(location: str, sub: str) -> str:
    """The person signs in at the provider (its form, as a browser posts it): the callback URL
    the provider redirects to."""
    page = httpx.get(location)
    assert page.status_code == 200 and "sub" in page.text
    r = httpx.post(location, data={"sub": sub, "action": "authorize"})
    assert r.status_code == 302, r.text
    return r.headers["location"]


def _app(make_client: MakeClient, issuer: str) -> tuple[TestClient, People]:
    client = make_client(
        oidc_issuer=issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret="s3cret-of-the-client",
        oidc_label="Test University",
    )
    return client, seed_people(client.app.state.sessions)  # type: ignore[attr-defined]


def _start(client: TestClient, next_path: str = "/account") -> str:
    r = client.get(f"/api/auth/oidc/login?next={next_path}", follow_redirects=False)
    assert r.status_code == 302, r.text
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{BROWSER_COOKIE}=") and "HttpOnly" in cookie
    assert "Path=/api/auth/oidc" in cookie
    return r.headers["location"]


def _path(callback: str) -> str:
    parts = urlsplit(callback)
    assert parts.netloc == "testserver"
    return f"{parts.path}?{parts.query}"


def test_round_trip_creates_then_reuses_an_account(make_client: MakeClient, idp: str):
    client, _ = _app(make_client, idp)
    _set_user(idp, "alice-1", email="alice@uni.example", email_verified=True, name="Alice")
    location = _start(client)
    query = parse_qs(urlsplit(location).query)
    assert query["client_id"] == [CLIENT_ID]
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
    assert query["nonce"] and query["state"]
    assert query["redirect_uri"] == ["http://testserver/api/auth/oidc/callback"]
    callback = _authorize(location, "alice-1")
    r = client.get(_path(callback), follow_redirects=False)
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/account"
    assert COOKIE in client.cookies
    me = client.get("/api/auth/me").json()
    assert me["user"]["email"] == "alice@uni.example" and me["user"]["name"] == "Alice"
    assert me["user"]["role"] == "member"
    first_id = me["user"]["id"]
    # Again, later: the same account by (issuer, subject), even with a changed email.
    _set_user(idp, "alice-1", email="alice.new@uni.example", email_verified=True, name="Alice")
    client.cookies.clear()
    callback = _authorize(_start(client), "alice-1")
    assert client.get(_path(callback), follow_redirects=False).status_code == 303
    assert client.get("/api/auth/me").json()["user"]["id"] == first_id
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        user = session.get(User, first_id)
        assert user is not None and (user.oidc_issuer, user.oidc_subject) == (idp, "alice-1")


def test_verified_email_links_the_existing_account(make_client: MakeClient, idp: str):
    client, people = _app(make_client, idp)
    _set_user(idp, "s-42", email="Student@Example.edu", email_verified=True)
    callback = _authorize(_start(client), "s-42")
    assert client.get(_path(callback), follow_redirects=False).status_code == 303
    assert client.get("/api/auth/me").json()["user"]["id"] == people.users["student"]
    # An unverified email is not trusted: a new account, without that email.
    _set_user(idp, "mallory", email="ta@example.edu", email_verified=False)
    client.cookies.clear()
    callback = _authorize(_start(client), "mallory")
    assert client.get(_path(callback), follow_redirects=False).status_code == 303
    me = client.get("/api/auth/me").json()["user"]
    assert me["id"] != people.users["ta"] and me["email"] is None


def test_forged_state_is_refused(make_client: MakeClient, idp: str):
    client, _ = _app(make_client, idp)
    callback = _authorize(_start(client), "bob")
    forged = re.sub(r"state=[^&]+", "state=forged-state-value", _path(callback))
    r = client.get(forged, follow_redirects=False)
    assert r.status_code == 400 and error_of(r)["code"] == "invalid_state"
    assert COOKIE not in client.cookies
    no_state = client.get("/api/auth/oidc/callback?code=abc", follow_redirects=False)
    assert no_state.status_code == 400


def test_replayed_callback_is_refused(make_client: MakeClient, idp: str):
    client, _ = _app(make_client, idp)
    callback = _authorize(_start(client), "carol")
    browser = client.cookies.get(BROWSER_COOKIE)
    assert client.get(_path(callback), follow_redirects=False).status_code == 303
    client.cookies.clear()
    client.cookies.set(BROWSER_COOKIE, browser or "", path="/api/auth/oidc")
    again = client.get(_path(callback), follow_redirects=False)
    assert again.status_code == 400 and error_of(again)["code"] == "invalid_state"
    assert COOKIE not in client.cookies


def test_another_browser_cannot_finish_the_sign_on(make_client: MakeClient, idp: str):
    """Login CSRF through single sign-on: a callback URL planted in a victim's browser."""
    client, _ = _app(make_client, idp)
    callback = _authorize(_start(client), "attacker")
    victim = TestClient(client.app)
    r = victim.get(_path(callback), follow_redirects=False)
    assert r.status_code == 400 and error_of(r)["code"] == "invalid_state"
    assert COOKIE not in victim.cookies


def test_next_is_only_a_path_of_this_site(make_client: MakeClient, idp: str):
    client, _ = _app(make_client, idp)
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        callback = _authorize(_start(client, target), "dave")
        r = client.get(_path(callback), follow_redirects=False)
        assert r.headers["location"] == "/", target


def test_sso_is_off_without_settings(make_client: MakeClient):
    client = make_client()
    r = client.get("/api/auth/oidc/login", follow_redirects=False)
    assert r.status_code == 404 and error_of(r)["code"] == "sso_not_configured"


def _real_id_token(issuer: str, client_id: str, nonce: str) -> str:
    """An id_token the provider signs, by the code flow driven by hand."""
    redirect = "http://client.example/cb"
    location = httpx.Request(
        "GET",
        f"{issuer}/oauth2/authorize",
        params={
            "client_id": client_id,
            "redirect_uri": redirect,
            "response_type": "code",
            "scope": "openid email",
            "state": "s",
            "nonce": nonce,
        },
    ).url
    code = parse_qs(urlsplit(_authorize(str(location), "erin")).query)["code"][0]
    token = httpx.post(
        f"{issuer}/oauth2/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": redirect},
        auth=(client_id, "x"),
    )
    assert token.status_code == 200, token.text
    return str(token.json()["id_token"])


def test_id_token_checks_refuse_wrong_issuer_audience_nonce_and_key(idp: str):
    from joserfc.jwk import KeySet

    keys = KeySet.import_key_set(httpx.get(f"{idp}/jwks").json())
    token = _real_id_token(idp, CLIENT_ID, "n-1")
    claims = verify_id_token(token, keys, idp, CLIENT_ID, "n-1")
    assert claims["sub"] == "erin"
    for issuer, audience, nonce in (
        ("http://127.0.0.1:1", CLIENT_ID, "n-1"),
        (idp, "another-client", "n-1"),
        (idp, CLIENT_ID, "n-2"),
    ):
        with pytest.raises(ApiError):
            verify_id_token(token, keys, issuer, audience, nonce)
    # Another provider's keys (a token not signed by this issuer) and a tampered token.
    other = KeySet.generate_key_set("RSA", 2048, count=1)
    with pytest.raises(ApiError):
        verify_id_token(token, other, idp, CLIENT_ID, "n-1")
    head, body, sig = token.split(".")
    with pytest.raises(ApiError):
        verify_id_token(f"{head}.{body}.{sig[:-4]}AAAA", keys, idp, CLIENT_ID, "n-1")


def test_token_for_another_client_is_refused_in_the_flow(make_client: MakeClient, idp: str):
    """The provider's code for another client id, sent to this app's callback: the exchange or
    the audience check refuses it."""
    client, _ = _app(make_client, idp)
    location = _start(client)
    location = location.replace(f"client_id={CLIENT_ID}", "client_id=someone-else")
    callback = _authorize(location, "frank")
    r = client.get(_path(callback), follow_redirects=False)
    assert r.status_code == 400
    assert COOKIE not in client.cookies
