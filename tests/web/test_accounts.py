"""Accounts in the browser: signing in on /login (a wrong password first), the nav's account
slot, creating and revoking a personal access token on /account, setting a password by a
reset link, and signing out."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import oidc_provider_mock
import pytest
import werkzeug.serving
from playwright.sync_api import Browser, Page, expect

from app.core.config import REPO_ROOT
from tests.web.conftest import Server, browsing, serving
from tests.web.helpers import axe_violations, shot

pytestmark = pytest.mark.timeout(240)

PASSWORD = "a browser password"


def _cli(server: Server, *args: str, stdin: str | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO_ROOT,
        env=server.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def test_sign_in_create_and_revoke_a_token(page: Page, server: Server) -> None:
    _cli(
        server,
        "users",
        "create",
        "--email",
        "web.student@example.edu",
        "--name",
        "Web Student",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    page.goto("/account")
    expect(page.locator("#nav-account")).to_contain_text("Sign in")
    page.locator("#nav-account a").click()
    expect(page).to_have_url(f"{server.url}/login?next=%2Faccount")
    assert axe_violations(page) == []
    page.get_by_label("Email").fill("web.student@example.edu")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#login-error")).to_have_text("wrong email or password")
    shot(page, "accounts-login-error")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{server.url}/account")
    expect(page.locator("#nav-account")).to_contain_text("Web Student")
    expect(page.locator("#account-facts")).to_contain_text("web.student@example.edu")
    cookie = next(c for c in page.context.cookies() if c["name"] == "tj_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"

    page.get_by_label("New token's name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#token-secret-value").inner_text()
    assert secret.startswith("tj_")
    row = page.locator('#tokens-table tr[data-token="laptop"]')
    expect(row).to_contain_text("active")
    shot(page, "accounts-token-created", full_page=True)
    me = httpx.get(f"{server.url}/api/auth/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.json()["user"]["name"] == "Web Student"

    page.get_by_role("button", name="Revoke laptop").click()
    expect(row).to_contain_text("revoked")
    shot(page, "accounts-token-revoked", full_page=True)
    gone = httpx.get(f"{server.url}/api/auth/me", headers={"Authorization": f"Bearer {secret}"})
    assert gone.status_code == 403

    # Another browser signs in: listed on the page, and signed out from it.
    with httpx.Client(base_url=server.url) as phone:
        signed = phone.post(
            "/api/auth/login", json={"email": "web.student@example.edu", "password": PASSWORD}
        )
        assert signed.status_code == 200
        page.reload()
        rows = page.locator("#sessions-table tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator('#sessions-table tr[data-current="true"]')).to_contain_text(
            "this browser"
        )
        shot(page, "accounts-sessions", full_page=True)
        page.get_by_role("button", name="Sign out browser 1").click()
        expect(rows).to_have_count(1)
        assert phone.get("/api/auth/me").json()["user"] is None
    assert axe_violations(page) == []

    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page).to_have_url(f"{server.url}/")
    expect(page.locator("#nav-account")).to_contain_text("Sign in")


def test_reset_link_sets_a_password_and_signs_in(page: Page, server: Server) -> None:
    _cli(server, "users", "create", "--email", "web.ta@example.edu", "--name", "Web TA")
    link = _cli(server, "users", "reset-link", "web.ta@example.edu").strip()
    page.goto(link)
    page.get_by_label("New password (at least 10 characters)").fill("short")
    page.get_by_label("The same again").fill("short")
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.locator("#reset-error")).to_contain_text("at least 10")
    page.get_by_label("New password (at least 10 characters)").fill("the ta's new password")
    page.get_by_label("The same again").fill("the ta's new password")
    shot(page, "accounts-reset")
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page).to_have_url(f"{server.url}/account")
    expect(page.locator("#nav-account")).to_contain_text("Web TA")
    # The link is used up.
    page.goto(link)
    page.get_by_label("New password (at least 10 characters)").fill("yet another password")
    page.get_by_label("The same again").fill("yet another password")
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page.locator("#reset-error")).to_contain_text("already used")


def test_single_sign_on_in_the_browser(browser: Browser, web_assets: Path, tmp_path: Path) -> None:
    """The login page's button, the real provider's page, and back signed in (a new account)."""
    pat = oidc_provider_mock.User(
        sub="pat-7", claims={"email": "pat@uni.example", "email_verified": True, "name": "Pat SSO"}
    )
    idp = werkzeug.serving.make_server(
        "127.0.0.1", 0, oidc_provider_mock.app(require_nonce=True, user_claims=[pat]), threaded=True
    )
    thread = threading.Thread(target=idp.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        with (
            serving(
                tmp_path,
                GRADER_OIDC_ISSUER=f"http://127.0.0.1:{idp.server_port}",
                GRADER_OIDC_CLIENT_ID="tensorjudge",
                GRADER_OIDC_CLIENT_SECRET="client-secret-for-tests",
                GRADER_OIDC_LABEL="Test University",
            ) as app_server,
            browsing(browser, app_server.url) as page,
        ):
            assert isinstance(page, Page)
            page.goto("/login?next=/account")
            button = page.get_by_role("link", name="Sign in with Test University")
            expect(button).to_be_visible()
            shot(page, "accounts-login-sso")
            button.click()
            expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible()
            page.get_by_role("button", name="pat-7").click()
            expect(page).to_have_url(f"{app_server.url}/account")
            expect(page.locator("#nav-account")).to_contain_text("Pat SSO")
            expect(page.locator("#account-facts")).to_contain_text("pat@uni.example")
            shot(page, "accounts-sso-signed-in")
    finally:
        idp.shutdown()
        thread.join(10)
        idp.server_close()


@pytest.mark.parametrize(
    "target", ["//evil.example/x", "/%09/evil.example/x", "https://evil.example/"]
)
def test_sign_in_never_leaves_the_site(page: Page, server: Server, target: str) -> None:
    email = f"next-{hashlib.sha256(target.encode()).hexdigest()[:8]}@example.edu"
    _cli(
        server,
        "users",
        "create",
        "--email",
        email,
        "--name",
        "Next",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    page.goto(f"/login?next={target}")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{server.url}/")
