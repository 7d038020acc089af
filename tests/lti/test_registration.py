"""Registering an LMS (API and `python -m app lti`), the tool's values to paste into it, its
signing keys (made on first need, rotated, the old one still published), and roster sync on
demand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from app.core.config import REPO_ROOT
from app.courses.models import Membership
from app.lti.models import LtiContext, LtiPlatform
from app.lti.services import client_assertion
from tests.lti.conftest import TOOL, Tool
from tests.support.lti_platform import LEARNER


def test_the_admin_registers_an_lms_once(tool: Tool) -> None:
    listed = tool.api.get("/api/lti/platforms", headers=tool.admin)
    (platform,) = listed.json()
    assert platform["issuer"] == tool.platform.url  # as the platform's iss says it, exactly
    assert platform["deployment_ids"] == ["deployment-1"]
    again = tool.api.post("/api/lti/platforms", json=tool.platform.registration, headers=tool.admin)
    assert again.status_code == 409 and again.json()["error"]["code"] == "platform_exists"
    one = tool.api.get(f"/api/lti/platforms/{platform['id']}", headers=tool.admin)
    assert one.json() == platform
    bad = tool.api.post(
        "/api/lti/platforms",
        json={**tool.platform.registration, "keyset_url": "not a url", "client_id": "x"},
        headers=tool.admin,
    )
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "keyset_url"


def test_the_tools_values_to_paste_into_the_lms(tool: Tool) -> None:
    values = tool.api.get("/api/lti/tool", headers=tool.admin).json()
    assert values["login_initiation_url"] == f"{TOOL}/lti/login"
    assert values["launch_url"] == values["deep_linking_url"] == f"{TOOL}/lti/launch"
    assert values["redirect_uris"] == [f"{TOOL}/lti/launch"]
    assert values["jwks_url"] == f"{TOOL}/lti/jwks"


def test_keys_are_made_on_first_need_and_rotated(tool: Tool) -> None:
    (first,) = tool.api.get("/lti/jwks").json()["keys"]
    assert first["kty"] == "RSA" and first["alg"] == "RS256" and "d" not in first
    platform = tool.platform
    with tool.sessions() as session:
        row = session.scalars(select(LtiPlatform)).one()
        old_assertion = client_assertion(session, row)
    rotated = tool.api.post("/api/lti/keys/rotate", headers=tool.admin)
    assert rotated.status_code == 200
    published = tool.api.get("/lti/jwks").json()
    assert [k["kid"] for k in published["keys"]] == [rotated.json()["kid"], first["kid"]]
    keys = KeySet.import_key_set(published)
    # What the old key signed still checks; new signatures use the new key.
    assert jwt.decode(old_assertion, keys).claims["iss"] == "tensorjudge-client"
    with tool.sessions() as session:
        new_assertion = client_assertion(session, row)
    assert jwt.decode(new_assertion, keys).header["kid"] == rotated.json()["kid"]
    assert (
        platform.issue_token(
            {
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": new_assertion,
            }
        )[0]
        == 200
    )


def test_roster_sync_on_demand(tool: Tool) -> None:
    tool.first_launch(tool.browser(), "ines", "deep-link")
    with tool.sessions() as session:
        course_id = session.scalars(select(LtiContext.course_id)).one()
    tool.platform.add_person("dan", "Dan Late", [LEARNER])
    synced = tool.api.post(f"/api/courses/{course_id}/lti/roster-sync", headers=tool.admin)
    assert synced.status_code == 200, synced.text
    assert synced.json() == {"members": 4, "added": 1, "pending": 0}
    with tool.sessions() as session:
        students = session.scalars(
            select(Membership).where(
                Membership.course_id == course_id, Membership.role == "student"
            )
        ).all()
    assert len(students) == 3  # sam, carol and dan, none of whom launched
    tool.platform.down = True
    down = tool.api.post(f"/api/courses/{course_id}/lti/roster-sync", headers=tool.admin)
    assert down.status_code == 502 and down.json()["error"]["code"] == "lms_unavailable"


def test_the_cli_registers_and_shows_the_tools_values(tmp_path: Path) -> None:
    env = {"GRADER_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app", "lti", *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    added = run(
        "platforms", "add", "--name", "Canvas", "--issuer", "https://canvas.instructure.com",
        "--client-id", "10000000000001", "--deployment", "1:abc",
        "--login-url", "https://sso.canvaslms.com/api/lti/authorize_redirect",
        "--token-url", "https://sso.canvaslms.com/login/oauth2/token",
        "--keyset-url", "https://sso.canvaslms.com/api/lti/security/jwks",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = run("platforms", "list")
    assert "https://canvas.instructure.com\t10000000000001\t1:abc" in listed.stdout
    assert run("platforms", "add", "--name", "x", "--issuer", "https://canvas.instructure.com",
               "--client-id", "10000000000001", "--deployment", "1", "--login-url", "https://a",
               "--token-url", "https://a", "--keyset-url", "https://a").returncode == 1  # fmt: skip
    shown = run("tool", "--url", "https://judge.example.edu")
    assert json.loads(shown.stdout)["jwks_url"] == "https://judge.example.edu/lti/jwks"
    assert run("keys", "rotate").returncode == 0


def test_a_deployment_without_lti_makes_no_key(tmp_path: Path) -> None:
    """The key costs an RSA generation: made when LTI is first used, not at every start."""
    from fastapi.testclient import TestClient
    from sqlalchemy.orm import Session, sessionmaker

    from app.lti.models import LtiKey
    from app.main import create_app
    from tests.instructors.conftest import make_settings

    with TestClient(create_app(make_settings(tmp_path / "data"))) as api:
        sessions: sessionmaker[Session] = api.app.state.sessions  # type: ignore[attr-defined]
        with sessions() as session:
            assert session.scalars(select(LtiKey)).all() == []
        (key,) = api.get("/lti/jwks").json()["keys"]
        assert api.get("/lti/jwks").json()["keys"] == [key]  # made once, then kept
        with sessions() as session:
            assert [r.kid for r in session.scalars(select(LtiKey))] == [key["kid"]]
