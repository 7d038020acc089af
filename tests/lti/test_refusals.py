"""Launches that must be refused with a clear page and change nothing: a foreign signing key,
another audience (tokens that differ from a good one only in ``aud`` or only in ``azp``), an
expired token, one issued too long ago, a replayed launch, an unknown deployment, a student on the
instructor's deep-linking link, a state from another browser or never issued."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.lti.conftest import Tool
from tests.support.lti_platform import (
    CLIENT_ID,
    LTI,
    OTHER_CLIENT,
    MockPlatform,
    form_fields,
    new_key,
)


def _foreign_key(platform: MockPlatform) -> None:
    # Same kid as the platform's real key: only the signature can tell.
    platform.sign_with = new_key(platform.key.kid or "")


def _unknown_kid(platform: MockPlatform) -> None:
    platform.sign_with = new_key("attacker-key")


def _tamper(change: Callable[[dict[str, Any]], None]) -> Callable[[MockPlatform], None]:
    def setup(platform: MockPlatform) -> None:
        platform.tamper = change

    return setup


def _expire(claims: dict[str, Any]) -> None:
    claims["iat"] = int(time.time()) - 4000
    claims["exp"] = int(time.time()) - 3600


def _issued_20_minutes_ago(claims: dict[str, Any]) -> None:
    """Old by the wall clock, though its ``exp`` is still in the future."""
    claims["iat"] = int(time.time()) - 1200
    claims["exp"] = int(time.time()) + 300


def _for_another_tool(claims: dict[str, Any]) -> None:
    """Only the audience differs: a token the LMS issued to another tool, with no ``azp``."""
    claims["aud"] = OTHER_CLIENT
    claims.pop("azp", None)


def _two_audiences(claims: dict[str, Any]) -> None:
    """TensorJudge among the audiences, but no ``azp`` saying which one it was issued to."""
    claims["aud"] = [CLIENT_ID, OTHER_CLIENT]
    claims.pop("azp", None)


CASES: dict[str, tuple[Callable[[MockPlatform], None], int, str]] = {
    "foreign key": (_foreign_key, 401, "bad_signature"),
    "unknown kid": (_unknown_kid, 401, "bad_signature"),
    "bad audience": (_tamper(lambda c: c.update(aud="someone-else", azp="someone-else")), 401,
                     "invalid_claims"),
    "another tool's audience, no azp": (_tamper(_for_another_tool), 401, "invalid_claims"),
    "another tool's azp": (_tamper(lambda c: c.update(azp=OTHER_CLIENT)), 401, "invalid_claims"),
    "two audiences, no azp": (_tamper(_two_audiences), 401, "invalid_claims"),
    "expired": (_tamper(_expire), 401, "invalid_claims"),
    "issued 20 minutes ago": (_tamper(_issued_20_minutes_ago), 401, "invalid_claims"),
    "unknown deployment": (_tamper(lambda c: c.update({LTI + "deployment_id": "rogue"})), 403,
                           "unknown_deployment"),
    "wrong nonce": (_tamper(lambda c: c.update(nonce="guessed")), 401, "invalid_nonce"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_launch_is_refused_and_changes_nothing(tool: Tool, case: str) -> None:
    setup, status, code = CASES[case]
    before = tool.counts()
    setup(tool.platform)
    refused = tool.launch(tool.browser(), "sam", "deep-link")
    assert refused.status_code == status, refused.text
    assert f'data-code="{code}"' in refused.text
    assert "This launch did not work" in refused.text
    assert "tj_session" not in refused.cookies
    assert tool.counts() == before


def test_a_replayed_launch_is_refused(tool: Tool) -> None:
    browser = tool.browser()
    start = browser.post(
        "/lti/login", data=tool.platform.login_params("ines", "deep-link"), follow_redirects=False
    )
    _, fields = form_fields(httpx.get(start.headers["location"]).text)
    first = browser.post("/lti/launch", data=fields, follow_redirects=False)
    assert first.status_code == 200, first.text
    before = tool.counts()
    again = browser.post("/lti/launch", data=fields, follow_redirects=False)
    assert again.status_code == 400 and 'data-code="replayed"' in again.text
    # The same id_token with a fresh state: its nonce is the first login's, not this one's.
    restart = browser.post(
        "/lti/login", data=tool.platform.login_params("ines", "deep-link"), follow_redirects=False
    )
    _, fresh = form_fields(httpx.get(restart.headers["location"]).text)
    spliced = browser.post(
        "/lti/launch",
        data={"state": fresh["state"], "id_token": fields["id_token"]},
        follow_redirects=False,
    )
    assert spliced.status_code == 401 and 'data-code="invalid_nonce"' in spliced.text
    assert tool.counts() == before


def test_a_student_on_the_instructors_link_is_refused(tool: Tool) -> None:
    before = tool.counts()
    refused = tool.launch(tool.browser(), "sam", "deep-link")
    assert refused.status_code == 403 and 'data-code="not_instructor"' in refused.text
    assert tool.counts() == before


def test_another_browsers_state_or_a_made_up_one_is_refused(tool: Tool) -> None:
    started = tool.browser()
    start = started.post(
        "/lti/login", data=tool.platform.login_params("sam", "deep-link"), follow_redirects=False
    )
    _, fields = form_fields(httpx.get(start.headers["location"]).text)
    other = tool.browser()
    other.cookies.set("tj_lti", "someone-elses-login")
    refused = other.post("/lti/launch", data=fields, follow_redirects=False)
    assert refused.status_code == 400 and 'data-code="invalid_state"' in refused.text
    made_up = tool.browser().post(
        "/lti/launch", data={**fields, "state": "never-issued"}, follow_redirects=False
    )
    assert made_up.status_code == 400 and 'data-code="invalid_state"' in made_up.text


def test_an_unregistered_platform_cannot_start_a_login(tool: Tool) -> None:
    params = {**tool.platform.login_params("sam", "deep-link"), "iss": "https://evil.example"}
    refused = tool.browser().post("/lti/login", data=params, follow_redirects=False)
    assert refused.status_code == 400 and 'data-code="unknown_platform"' in refused.text
