"""The LTI suite: the mock platform of tests/support/lti_platform.py, and the tool (the app on
a fresh SQLite file or the shared PostgreSQL) with the platform registered by an admin. The
TestClient is the person's browser; the platform is reached over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import create_user
from app.auth.models import User
from app.auth.tokens import issue_token
from app.courses.models import Course, Membership
from app.lti.keys import public_jwks
from app.lti.launch import _keysets
from app.lti.models import LtiContext, LtiLineItem, LtiUser
from app.lti.services import forget_tokens
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.lti_platform import INSTRUCTOR, LEARNER, MockPlatform, form_fields

TOOL = "http://testserver"


@pytest.fixture
def platform() -> Iterator[MockPlatform]:
    mock = MockPlatform().start()
    mock.tool_login = f"{TOOL}/lti/login"
    _keysets.clear()
    forget_tokens()
    try:
        yield mock
    finally:
        mock.stop()


@dataclass
class Tool:
    api: TestClient
    admin: dict[str, str]
    platform: MockPlatform

    @property
    def sessions(self) -> sessionmaker[Session]:
        found: sessionmaker[Session] = self.api.app.state.sessions  # type: ignore[attr-defined]
        return found

    def browser(self) -> TestClient:
        """A new browser (its own cookies) on the same app."""
        # Not entered: the app's lifespan is already running under ``api``.
        return TestClient(self.api.app)

    def launch(self, browser: TestClient, hint: str, message: str) -> httpx.Response:
        """The person ``hint`` opens ``message`` (a link id or "deep-link") in the LMS: the login
        initiation, the platform's auth answer (a self-posting form), and the launch."""
        start = browser.post(
            "/lti/login", data=self.platform.login_params(hint, message), follow_redirects=False
        )
        assert start.status_code == 302, start.text
        location = start.headers["location"]
        assert location.startswith(f"{self.platform.url}/auth?")
        answer = httpx.get(location)
        assert answer.status_code == 200, answer.text
        action, fields = form_fields(answer.text)
        assert action == f"{TOOL}/lti/launch"
        return browser.post("/lti/launch", data=fields, follow_redirects=False)

    def link(self, browser: TestClient, page: httpx.Response, choice: str) -> httpx.Response:
        """The instructor answers the linking page of an LMS course's first launch."""
        assert page.status_code == 200 and 'action="/lti/link-course"' in page.text, page.text
        _, fields = form_fields(page.text)
        return browser.post(
            "/lti/link-course",
            data={"secret": fields["secret"], "choice": choice},
            follow_redirects=False,
        )

    def first_launch(self, browser: TestClient, hint: str, message: str) -> httpx.Response:
        """An instructor's launch from the still unlinked LMS course: it becomes a new course."""
        return self.link(browser, self.launch(browser, hint, message), "new")

    def counts(self) -> dict[str, int]:
        """How many rows of what a launch may make: a failed launch changes none."""
        with self.sessions() as session:
            return {
                model.__name__: session.scalar(select(func.count()).select_from(model)) or 0
                for model in (Course, User, Membership, LtiContext, LtiUser, LtiLineItem)
            }


@pytest.fixture
def tool(tmp_path: Path, database_url: str | None, platform: MockPlatform) -> Iterator[Tool]:
    settings = make_settings(
        tmp_path / "data",
        database_url,
        # The tests run the sender themselves (send_due), at the moments they choose.
        lti_send_interval_seconds=3600,
        lti_retry_base_seconds=0.01,
        lti_retry_max_seconds=0.01,
    )
    with TestClient(create_app(settings)) as api:
        sessions: sessionmaker[Session] = api.app.state.sessions  # type: ignore[attr-defined]
        with sessions() as session:
            admin = create_user(session, "admin@example.edu", "Admin", "admin")
            _, token = issue_token(session, admin.id, "tests")
            session.commit()

        def tool_jwks() -> dict[str, Any]:
            with sessions() as session:
                return public_jwks(session)

        platform.tool_jwks = tool_jwks
        headers = {"Authorization": f"Bearer {token}"}
        made = api.post("/api/lti/platforms", json=platform.registration, headers=headers)
        assert made.status_code == 201, made.text
        platform.add_person("ines", "Ines Instructor", [INSTRUCTOR])
        platform.add_person("sam", "Sam Student", [LEARNER])
        platform.add_person("carol", "Carol Neverlaunched", [LEARNER])
        yield Tool(api, headers, platform)
