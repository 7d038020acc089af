"""Who may call what: every route of the application against every kind of caller.

The routes are read from the app, so a route added without a rule here fails
``test_every_route_has_a_rule``. Each rule names the callers allowed; every other caller must
be refused (401, 403, or 404 where the thing is hidden from them), and nobody gets a 5xx.
A refusal is checked for what it is, not just its status: an allowed caller may still get a
4xx for the empty body this test sends (422, 409...), which shows it got past the gate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.authz.world import World, build_world
from tests.instructors.conftest import make_settings
from tests.support.routes import app_routes

ROLES = ("anonymous", "outsider", "other_student", "student", "ta", "instructor", "admin")
EVERYONE = frozenset(ROLES)
SIGNED_IN = EVERYONE - {"anonymous"}
# Deployment instructors (who edit the public catalog's cases) and admins.
CATALOG_STAFF = frozenset({"instructor", "admin"})
COURSE_MEMBERS = frozenset({"student", "ta", "instructor", "admin"})
COURSE_STAFF = frozenset({"ta", "instructor", "admin"})
COURSE_INSTRUCTORS = frozenset({"instructor", "admin"})
REFUSALS = (401, 403, 404)
ASSIGNMENT = "/api/courses/{course_id}/assignments/{assignment_id}"


@dataclass(frozen=True)
class Rule:
    allowed: frozenset[str]
    # The call removes what the path names: each allowed caller gets a world of its own.
    consumes: bool = False
    query: str = ""


RULES: dict[tuple[str, str], Rule] = {
    # Pages: HTML shells, public; what they show comes from the API below.
    ("GET", "/"): Rule(EVERYONE),
    ("GET", "/instructor"): Rule(EVERYONE),
    ("GET", "/problems/{problem_id}"): Rule(EVERYONE),
    ("GET", "/healthz"): Rule(EVERYONE),
    # Readiness is public like liveness; the metrics are for Prometheus's token and admins.
    ("GET", "/readyz"): Rule(EVERYONE),
    ("GET", "/metrics"): Rule(frozenset({"admin"})),
    ("GET", "/api/client"): Rule(EVERYONE),
    ("GET", "/client/"): Rule(EVERYONE),
    ("GET", "/client/{filename}"): Rule(EVERYONE),
    ("GET", "/api/auth/me"): Rule(EVERYONE),
    ("GET", "/api/problems"): Rule(EVERYONE),
    ("GET", "/api/problems/{problem_id}"): Rule(EVERYONE),
    ("GET", "/api/problems/{problem_id}/diagnosability"): Rule(CATALOG_STAFF),
    ("GET", "/api/problems/{problem_id}/stats"): Rule(CATALOG_STAFF),
    ("POST", "/api/problems/{problem_id}/submissions"): Rule(EVERYONE),
    ("GET", "/api/problems/{problem_id}/test-cases"): Rule(EVERYONE),
    ("POST", "/api/problems/{problem_id}/test-cases"): Rule(CATALOG_STAFF),
    ("GET", "/api/problems/{problem_id}/test-cases/{case_id}"): Rule(CATALOG_STAFF),
    ("DELETE", "/api/problems/{problem_id}/test-cases/{case_id}"): Rule(
        CATALOG_STAFF, consumes=True
    ),
    # Accounts and sign-in. The sign-in routes are for anyone (their own checks: same-site,
    # JSON, throttling); the account's own routes act on the caller's account only.
    ("GET", "/login"): Rule(EVERYONE),
    ("GET", "/account"): Rule(EVERYONE),
    ("GET", "/reset/{secret}"): Rule(EVERYONE),
    ("POST", "/api/auth/login"): Rule(EVERYONE),
    ("POST", "/api/auth/logout"): Rule(EVERYONE),
    ("POST", "/api/auth/reset"): Rule(EVERYONE),
    ("POST", "/api/auth/token"): Rule(EVERYONE),
    # Single sign-on is not configured here: 404 for everyone (tests/accounts/test_oidc.py).
    ("GET", "/api/auth/oidc/login"): Rule(frozenset()),
    ("GET", "/api/auth/oidc/callback"): Rule(frozenset()),
    # LTI: the LMS's endpoints are for anyone (the platform's signature, the one-use state and
    # nonce decide: tests/lti/); a deep-linking pick needs the picking instructor's one-use
    # secret, which none of these callers has. Registration, keys and the outbox: admins; a
    # course's outbox and roster sync: its staff (409 here: no LMS course is linked).
    ("GET", "/lti/jwks"): Rule(EVERYONE),
    ("GET", "/lti/login"): Rule(EVERYONE),
    ("POST", "/lti/login"): Rule(EVERYONE),
    ("POST", "/lti/launch"): Rule(EVERYONE),
    ("POST", "/lti/deep-link"): Rule(frozenset()),
    ("GET", "/api/lti/tool"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/platforms"): Rule(frozenset({"admin"})),
    ("POST", "/api/lti/platforms"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/platforms/{platform_id}"): Rule(frozenset({"admin"})),
    ("POST", "/api/lti/keys/rotate"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/scores"): Rule(frozenset({"admin"})),
    ("GET", "/api/courses/{course_id}/lti/scores"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/lti/roster-sync"): Rule(COURSE_STAFF),
    ("GET", "/api/account/tokens"): Rule(SIGNED_IN),
    ("POST", "/api/account/tokens"): Rule(SIGNED_IN),
    # The student's own token: anyone else's is not theirs to see (404).
    ("DELETE", "/api/account/tokens/{token_id}"): Rule(frozenset({"student"}), consumes=True),
    ("PUT", "/api/account/password"): Rule(SIGNED_IN),
    ("GET", "/api/account/sessions"): Rule(SIGNED_IN),
    # The student's own session: anyone else's is not theirs to see (404).
    ("DELETE", "/api/account/sessions/{session_id}"): Rule(frozenset({"student"}), consumes=True),
    ("GET", "/api/admin/users"): Rule(frozenset({"admin"})),
    ("POST", "/api/admin/users"): Rule(frozenset({"admin"})),
    ("PATCH", "/api/admin/users/{user_id}"): Rule(frozenset({"admin"})),
    ("POST", "/api/admin/users/{user_id}/reset-link"): Rule(frozenset({"admin"})),
    # Courses and rosters.
    ("GET", "/courses"): Rule(EVERYONE),
    ("GET", "/courses/{course_id}/roster"): Rule(EVERYONE),
    ("GET", "/join/{code}"): Rule(EVERYONE),
    ("GET", "/api/courses"): Rule(SIGNED_IN),
    ("POST", "/api/courses"): Rule(CATALOG_STAFF),
    ("POST", "/api/courses/join"): Rule(SIGNED_IN),
    ("GET", "/api/courses/{course_id}"): Rule(COURSE_MEMBERS),
    ("PATCH", "/api/courses/{course_id}"): Rule(COURSE_INSTRUCTORS),
    ("DELETE", "/api/courses/{course_id}"): Rule(COURSE_INSTRUCTORS, consumes=True),
    ("GET", "/api/courses/{course_id}/members"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/members"): Rule(COURSE_INSTRUCTORS),
    ("PATCH", "/api/courses/{course_id}/members/{user_id}"): Rule(COURSE_INSTRUCTORS),
    ("DELETE", "/api/courses/{course_id}/members/{user_id}"): Rule(
        COURSE_INSTRUCTORS, consumes=True
    ),
    ("POST", "/api/courses/{course_id}/members/{user_id}/reset-link"): Rule(COURSE_INSTRUCTORS),
    ("GET", "/api/courses/{course_id}/sections"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/roster"): Rule(COURSE_INSTRUCTORS),
    # Assignments. Staff submissions are practice that never counts; TAs grant overrides.
    ("GET", "/courses/{course_id}"): Rule(EVERYONE),
    ("GET", "/courses/{course_id}/assignments/{assignment_id}"): Rule(EVERYONE),
    ("GET", "/courses/{course_id}/assignments/{assignment_id}/problems/{problem_id}"): Rule(
        EVERYONE
    ),
    ("GET", "/api/courses/{course_id}/assignments"): Rule(COURSE_MEMBERS),
    ("POST", "/api/courses/{course_id}/assignments"): Rule(COURSE_INSTRUCTORS),
    ("GET", f"{ASSIGNMENT}"): Rule(COURSE_MEMBERS),
    ("PATCH", f"{ASSIGNMENT}"): Rule(COURSE_INSTRUCTORS),
    ("DELETE", f"{ASSIGNMENT}"): Rule(COURSE_INSTRUCTORS, consumes=True),
    ("POST", f"{ASSIGNMENT}/publish"): Rule(COURSE_INSTRUCTORS),
    ("GET", f"{ASSIGNMENT}/overrides"): Rule(COURSE_STAFF),
    ("POST", f"{ASSIGNMENT}/overrides"): Rule(COURSE_STAFF),
    ("DELETE", f"{ASSIGNMENT}/overrides/{{override_id}}"): Rule(COURSE_STAFF, consumes=True),
    ("GET", f"{ASSIGNMENT}/problems/{{problem_id}}/attempts"): Rule(COURSE_MEMBERS),
    ("POST", f"{ASSIGNMENT}/problems/{{problem_id}}/submissions"): Rule(COURSE_MEMBERS),
    ("GET", f"{ASSIGNMENT}/submissions/me.csv"): Rule(COURSE_MEMBERS),
    # The gradebook: staff read and adjust; instructors regrade; a student reads their own.
    ("GET", "/courses/{course_id}/assignments/{assignment_id}/gradebook"): Rule(EVERYONE),
    ("GET", "/courses/{course_id}/assignments/{assignment_id}/students/{user_id}"): Rule(EVERYONE),
    ("GET", f"{ASSIGNMENT}/grades/me"): Rule(COURSE_MEMBERS),
    ("GET", f"{ASSIGNMENT}/gradebook"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/gradebook.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/attempts.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/canvas.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/students/{{user_id}}"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/adjustments"): Rule(COURSE_STAFF),
    ("POST", f"{ASSIGNMENT}/adjustments"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/insight"): Rule(COURSE_STAFF),
    ("POST", f"{ASSIGNMENT}/regrade"): Rule(COURSE_INSTRUCTORS),
    # The student's own submission in an assignment: the student and the course's staff.
    ("GET", "/api/submissions/{submission_id}"): Rule(COURSE_MEMBERS),
    ("GET", "/api/submissions/{submission_id}/events"): Rule(COURSE_MEMBERS),
    ("POST", "/api/submissions/{submission_id}/regrade"): Rule(CATALOG_STAFF),
    # Finding practice submissions (every account's) is for the catalog's staff only.
    ("GET", "/api/submissions"): Rule(CATALOG_STAFF),
    ("POST", "/api/regrades"): Rule(CATALOG_STAFF, query="?problem=no-such-problem"),
    # A course's submissions: its staff list them; its instructors regrade them.
    ("GET", "/api/courses/{course_id}/submissions"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/submissions/regrade"): Rule(
        COURSE_INSTRUCTORS, query="?problem=no-such-problem"
    ),
}


@pytest.fixture(scope="module")
def routes() -> list[tuple[str, str]]:
    return app_routes(create_app())


def test_every_route_has_a_rule(routes: list[tuple[str, str]]) -> None:
    missing = [f"{m} {p}" for m, p in routes if (m, p) not in RULES]
    assert not missing, "routes without an authorization rule in tests/authz/test_matrix.py:\n" + (
        "\n".join(missing)
    )
    stale = [f"{m} {p}" for m, p in RULES if (m, p) not in routes]
    assert not stale, "rules for routes that no longer exist:\n" + "\n".join(stale)


@pytest.fixture
def worlds(tmp_path: Path) -> Iterator[list[tuple[TestClient, World]]]:
    """Fresh deployments on demand; each closed at the end of the test."""
    made: list[tuple[TestClient, World]] = []
    clients: list[TestClient] = []

    def make() -> tuple[TestClient, World]:
        settings = make_settings(tmp_path / f"world-{len(clients)}")
        api = TestClient(create_app(settings))
        api.__enter__()
        clients.append(api)
        pair = (api, build_world(api))
        made.append(pair)
        return pair

    yield make  # type: ignore[misc]
    for api in clients:
        api.__exit__(None, None, None)


def _call(api: TestClient, world: World, method: str, path: str, rule: Rule, who: str) -> int:
    url = world.path(path) + rule.query
    headers = world.people.headers(who)
    body = None if method in ("GET", "DELETE") else {}
    response = api.request(method, url, json=body, headers=headers)
    assert response.status_code < 500, (method, path, who, response.text[:300])
    return response.status_code


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("method", "path"), sorted(RULES, key=lambda r: (r[1], r[0])))
def test_route_admits_exactly_its_callers(worlds, method: str, path: str) -> None:
    rule = RULES[(method, path)]
    api, world = worlds()
    wrong: list[str] = []
    # Refused callers first, so nothing an allowed call did can explain a refusal.
    for who in sorted(ROLES, key=lambda r: r in rule.allowed):
        if rule.consumes and who in rule.allowed:
            api, world = worlds()
        status = _call(api, world, method, path, rule, who)
        refused = status in REFUSALS
        if refused == (who in rule.allowed):
            wrong.append(f"{who}: {status} ({'refused' if refused else 'admitted'})")
    assert not wrong, f"{method} {path}: " + "; ".join(wrong)
