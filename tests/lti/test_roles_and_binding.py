"""LTI roles mapped to course roles (a TA never becomes an instructor), and the login state's
binding to the browser that started it."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.lti import logins
from app.lti.claims import course_role
from app.lti.launch import LaunchError
from app.lti.models import LtiPlatform
from tests.lti.conftest import Tool

M = "http://purl.imsglobal.org/vocab/lis/v2/membership"


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ([f"{M}#Instructor"], "instructor"),
        ([f"{M}#Learner"], "student"),
        (["Learner"], "student"),  # NRPS and older platforms: short names
        # The spec's best practice sends the principal role with its sub-role.
        ([f"{M}/Instructor#TeachingAssistant", f"{M}#Instructor"], "ta"),
        (["Instructor#TeachingAssistant", "Instructor"], "ta"),
        ([f"{M}/Instructor#TeachingAssistant"], "ta"),
        # An institution role is not a role in this course; a made-up one is not a TA.
        (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"], None),
        (["https://example.edu/roles#NotATeachingAssistantReally"], None),
        ("Instructor", None),
    ],
)
def test_lti_roles_map_to_course_roles(roles: object, expected: str | None) -> None:
    assert course_role(roles) == expected


def _login(tool: Tool) -> tuple[str, str]:
    with tool.sessions() as session:
        platform = session.scalars(select(LtiPlatform)).one()
        state, _, browser = logins.begin(session, platform.id)
        session.commit()
    return state, browser


def test_with_secure_cookies_a_launch_without_the_browser_cookie_is_refused(tool: Tool) -> None:
    state, _ = _login(tool)
    with tool.sessions() as session, pytest.raises(LaunchError) as refused:
        logins.claim(session, state, None, require_browser=True)
    assert refused.value.code == "invalid_state"
    state, browser = _login(tool)
    with tool.sessions() as session:  # the browser that started it finishes it, once
        assert logins.claim(session, state, browser, require_browser=True).nonce
        with pytest.raises(LaunchError) as again:
            logins.claim(session, state, browser, require_browser=True)
        assert again.value.code == "replayed"
    state, _ = _login(tool)
    with tool.sessions() as session:  # plain HTTP: the Lax cookie never comes back
        assert logins.claim(session, state, None).nonce


def test_another_browser_s_cookie_is_refused_either_way(tool: Tool) -> None:
    state, _ = _login(tool)
    _, other = _login(tool)
    with tool.sessions() as session, pytest.raises(LaunchError):
        logins.claim(session, state, other)
