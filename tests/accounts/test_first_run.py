"""The first administrator without a shell: the start-up prints a one-time setup link when no
administrator exists (and nothing once one does); the link creates one administrator, once; a
wrong, reused or expired link is refused; GRADER_INITIAL_ADMIN_EMAIL does it unattended."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.auth.first_run import SETUP_FILE
from app.auth.models import User
from app.db.base import utcnow
from app.main import create_app
from tests.accounts.conftest import JSON, error_of, login
from tests.instructors.conftest import make_settings

LINK = re.compile(r"http://127\.0\.0\.1:\d+(/(?:setup|reset)/[A-Za-z0-9_-]+)")
ADMIN = {"email": "Root@Example.edu", "name": "Root", "password": "a long admin password"}


@contextmanager
def start(
    data: Path, capsys: pytest.CaptureFixture[str], **overrides: object
) -> Iterator[tuple[TestClient, str]]:
    """The app started on ``data``, and what its start-up printed."""
    capsys.readouterr()
    with TestClient(create_app(make_settings(data, **overrides))) as client:
        yield client, capsys.readouterr().err


def setup(client: TestClient, secret: str, **changes: str) -> object:
    return client.post("/api/setup", json={"secret": secret, **ADMIN, **changes}, headers=JSON)


def admins(client: TestClient) -> list[str]:
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        return list(session.scalars(select(User.email).where(User.role == "admin")))


def test_the_printed_link_creates_the_first_admin_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(tmp_path / "data", capsys) as (client, printed):
        [path] = LINK.findall(printed)
        assert path.startswith("/setup/")
        secret = path.removeprefix("/setup/")
        assert client.get(path).status_code == 200  # the page

        wrong = setup(client, secret[:-2] + "xx")
        assert wrong.status_code == 404 and error_of(wrong)["code"] == "invalid_setup_link"
        # A typo in the form does not use the link up.
        typo = setup(client, secret, email="not an address")
        assert typo.status_code == 422 and admins(client) == [], typo.text

        done = setup(client, secret)
        assert done.status_code == 200, done.text
        assert done.json()["user"]["role"] == "admin"
        assert client.get("/api/auth/me").json()["user"]["email"] == "root@example.edu"
        assert admins(client) == ["root@example.edu"]

        again = setup(client, secret, email="second@example.edu")
        assert again.status_code == 404 and error_of(again)["code"] == "invalid_setup_link"
        assert admins(client) == ["root@example.edu"]
        client.cookies.clear()
        assert login(client, "root@example.edu", ADMIN["password"]).status_code == 200

    # The next start finds an administrator: no link, and the old one stays dead.
    with start(tmp_path / "data", capsys) as (client, printed):
        assert "/setup/" not in printed and "administrator" not in printed
        assert setup(client, secret, email="third@example.edu").status_code == 404
        assert admins(client) == ["root@example.edu"]


def test_a_restart_replaces_the_link_and_an_old_one_expires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(tmp_path / "data", capsys) as (client, printed):
        [first] = LINK.findall(printed)
    with start(tmp_path / "data", capsys) as (client, printed):
        [second] = LINK.findall(printed)
        assert second != first
        assert setup(client, first.removeprefix("/setup/")).status_code == 404
        record_file = tmp_path / "data" / SETUP_FILE
        assert record_file.stat().st_mode & 0o077 == 0  # the owner's only
        record = json.loads(record_file.read_text())
        assert second.removeprefix("/setup/") not in record_file.read_text()  # a digest only
        record["expires_at"] = (utcnow() - timedelta(seconds=1)).isoformat()
        record_file.write_text(json.dumps(record))
        expired = setup(client, second.removeprefix("/setup/"))
        assert expired.status_code == 404 and "expired" in error_of(expired)["message"]
        assert admins(client) == []


def test_the_environment_makes_the_admin_unattended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(
        tmp_path / "data",
        capsys,
        initial_admin_email="ops@example.edu",
        initial_admin_password="an unattended password",
    ) as (client, printed):
        assert printed.strip() == "" and not (tmp_path / "data" / SETUP_FILE).exists()
        assert admins(client) == ["ops@example.edu"]
        assert login(client, "ops@example.edu", "an unattended password").status_code == 200


def test_an_initial_admin_without_password_gets_a_reset_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start(tmp_path / "data", capsys, initial_admin_email="ops@example.edu") as (
        client,
        printed,
    ):
        [path] = LINK.findall(printed)
        assert path.startswith("/reset/") and admins(client) == ["ops@example.edu"]
        r = client.post(
            "/api/auth/reset",
            json={"secret": path.removeprefix("/reset/"), "password": "chosen in the browser"},
            headers=JSON,
        )
        assert r.status_code == 200 and r.json()["user"]["role"] == "admin"
