"""A deep-linking pick is answered once, by the instructor who launched it: the pick form's
secret, posted again or from another browser, makes no assignment and no line item."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.assignments.models import Assignment
from app.auth.models import User
from tests.lti.conftest import Tool
from tests.lti.test_journey import PROBLEM
from tests.support.browser_session import session_cookie
from tests.support.lti_platform import form_fields

CHOICE = {"choice": f"problem:{PROBLEM}"}


def assignments(tool: Tool) -> int:
    with tool.sessions() as session:
        return session.scalar(select(func.count()).select_from(Assignment)) or 0


def picking(tool: Tool) -> tuple[TestClient, str]:
    """Ines opens the pick: her browser and the form's secret."""
    browser = tool.browser()
    pick = tool.first_launch(browser, "ines", "deep-link")
    assert pick.status_code == 200, pick.text
    return browser, form_fields(pick.text)[1]["secret"]


def test_a_pick_is_answered_once(tool: Tool) -> None:
    browser, secret = picking(tool)
    answer = browser.post("/lti/deep-link", data={"secret": secret, **CHOICE})
    assert answer.status_code == 200, answer.text
    action, posted = form_fields(answer.text)
    assert httpx.post(action, data=posted).status_code == 200
    assert (assignments(tool), len(tool.platform.line_items)) == (1, 1)
    before = tool.counts()
    again = browser.post("/lti/deep-link", data={"secret": secret, **CHOICE})
    assert again.status_code == 400 and 'data-code="invalid_pick"' in again.text
    assert "JWT" not in again.text  # nothing to post to the LMS
    assert (assignments(tool), len(tool.platform.line_items)) == (1, 1)
    assert tool.counts() == before


def test_only_the_instructor_who_launched_a_pick_answers_it(tool: Tool) -> None:
    owner, secret = picking(tool)
    admin = tool.browser()  # signed in, and an administrator, but not who launched the pick
    with tool.sessions() as session:
        admin_id = session.scalars(select(User.id).where(User.role == "admin")).one()
    name, value, _ = session_cookie(tool.sessions, admin_id)
    admin.cookies.set(name, value)
    assert admin.get("/api/auth/me").json()["user"]["id"] == admin_id
    for browser in (tool.browser(), admin):
        refused = browser.post("/lti/deep-link", data={"secret": secret, **CHOICE})
        assert refused.status_code == 403 and 'data-code="invalid_pick"' in refused.text
        assert "JWT" not in refused.text
    assert assignments(tool) == 0
    # Refusing them did not use the pick up: its instructor still answers it.
    assert owner.post("/lti/deep-link", data={"secret": secret, **CHOICE}).status_code == 200
    assert assignments(tool) == 1
