"""Who may call what: every route of the application against every kind of caller.

The routes are read from the app, so a route added without a rule here fails
``test_every_route_has_a_rule``. Each rule names the callers allowed; every other caller must
be refused (401, 403, or 404 where the thing is hidden from them), and nobody gets a 5xx.
A refusal is checked for what it is, not just its status: an allowed caller may still get a
4xx for the empty body this test sends (422, 409...), which shows it got past the gate.

Courses do not trust each other (docs/security.md, Tenancy): every route that names a person,
a submission or what a person owns (in its path, query or body, read from the app's OpenAPI
document) also says who may call it when that is another course's (``across``), and, for a
person, once this course has enrolled them too (``shared``): ``test_across_courses``.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from tests.authz.world import PROBLEM, World, build_world
from tests.instructors.conftest import make_settings
from tests.support.routes import app_routes

ROLES = ("anonymous", "outsider", "other_student", "student", "ta", "instructor", "admin")
EVERYONE = frozenset(ROLES)
SIGNED_IN = EVERYONE - {"anonymous"}
# Deployment instructors (who create courses and read the catalog's hidden cases) and admins.
CATALOG_STAFF = frozenset({"instructor", "admin"})
COURSE_MEMBERS = frozenset({"student", "ta", "instructor", "admin"})
COURSE_STAFF = frozenset({"ta", "instructor", "admin"})
COURSE_INSTRUCTORS = frozenset({"instructor", "admin"})
REFUSALS = (401, 403, 404)
ASSIGNMENT = "/api/courses/{course_id}/assignments/{assignment_id}"
COURSE_CASES = "/api/courses/{course_id}/problems/{problem_id}/test-cases"


# Path, query and body fields that name a person, a submission or something of a person's.
PERSONAL = ("user_id", "user_ids", "submission_id", "override_id", "token_id")
NOBODY: frozenset[str] = frozenset()
ADMIN = frozenset({"admin"})


@dataclass(frozen=True)
class Rule:
    allowed: frozenset[str]
    # The call removes what the path names: each allowed caller gets a world of its own.
    consumes: bool = False
    query: str = ""
    # World values the path takes instead of the defaults, e.g. {"user_id": "new_user_id"}.
    fill: tuple[tuple[str, str], ...] = ()
    # Who may call it when what it names is the other course's (None: it names nothing).
    across: frozenset[str] | None = None
    # For a person: who may once this course has enrolled them too (None: ``allowed``).
    shared: frozenset[str] | None = None
    # What the cross-course calls send, {user_id} filled in: a query, a JSON body.
    across_query: str = ""
    across_body: tuple[tuple[str, object], ...] = ()


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
    # The catalog's cases grade every course: only administrators change them.
    ("POST", "/api/problems/{problem_id}/test-cases"): Rule(frozenset({"admin"})),
    ("GET", "/api/problems/{problem_id}/test-cases/{case_id}"): Rule(CATALOG_STAFF),
    ("DELETE", "/api/problems/{problem_id}/test-cases/{case_id}"): Rule(
        frozenset({"admin"}), consumes=True
    ),
    # A course's own cases (they grade only its assignments): its staff read, its instructors
    # change; the other course's staff: tests/instructors/test_course_cases.py.
    ("GET", COURSE_CASES): Rule(COURSE_STAFF),
    ("POST", COURSE_CASES): Rule(COURSE_INSTRUCTORS),
    ("GET", f"{COURSE_CASES}/{{course_case_id}}"): Rule(COURSE_STAFF),
    ("DELETE", f"{COURSE_CASES}/{{course_case_id}}"): Rule(COURSE_INSTRUCTORS, consumes=True),
    ("GET", "/api/courses/{course_id}/problems/{problem_id}/diagnosability"): Rule(COURSE_STAFF),
    # Accounts and sign-in. The sign-in routes are for anyone (their own checks: same-site,
    # JSON, throttling); the account's own routes act on the caller's account only.
    ("GET", "/login"): Rule(EVERYONE),
    ("GET", "/account"): Rule(EVERYONE),
    ("GET", "/reset/{secret}"): Rule(EVERYONE),
    ("GET", "/setup/{secret}"): Rule(EVERYONE),
    ("POST", "/api/auth/login"): Rule(EVERYONE),
    ("POST", "/api/auth/logout"): Rule(EVERYONE),
    ("POST", "/api/auth/reset"): Rule(EVERYONE),
    # Anyone holding the printed link, once, while no administrator exists.
    ("POST", "/api/setup"): Rule(EVERYONE),
    ("POST", "/api/auth/token"): Rule(EVERYONE),
    # Sign-up by join code or on an allowed domain, and its mailed link: anyone (same-site,
    # JSON, rate-limited per email and address; the answer never says whether an account
    # exists: tests/mail/test_signup.py).
    ("GET", "/signup"): Rule(EVERYONE),
    ("GET", "/verify/{secret}"): Rule(EVERYONE),
    ("POST", "/api/signup"): Rule(EVERYONE),
    ("POST", "/api/signup/verify"): Rule(EVERYONE),
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
    # Linking an LMS course or an LMS account: the launch's one-use secret (a form field, or a
    # cookie of the launching browser) decides, with the session; without them, nobody.
    ("POST", "/lti/link-course"): Rule(frozenset()),
    ("GET", "/lti/link-account"): Rule(frozenset()),
    ("POST", "/lti/link-account"): Rule(frozenset()),
    ("PATCH", "/api/lti/platforms/{platform_id}"): Rule(frozenset({"admin"})),
    ("GET", "/api/courses/{course_id}/lti/line-items"): Rule(COURSE_INSTRUCTORS),
    ("PUT", f"{ASSIGNMENT}/lti/line-item"): Rule(COURSE_INSTRUCTORS),
    ("GET", f"{ASSIGNMENT}/lti/line-item"): Rule(COURSE_INSTRUCTORS),
    ("GET", "/api/lti/tool"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/platforms"): Rule(frozenset({"admin"})),
    ("POST", "/api/lti/platforms"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/platforms/{platform_id}"): Rule(frozenset({"admin"})),
    ("POST", "/api/lti/keys/rotate"): Rule(frozenset({"admin"})),
    ("GET", "/api/lti/scores"): Rule(frozenset({"admin"})),
    ("GET", "/api/courses/{course_id}/lti/scores"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/lti/roster-sync"): Rule(COURSE_STAFF),
    ("GET", "/api/courses/{course_id}/lti/pending-members"): Rule(COURSE_STAFF),
    # The mail outbox (recipients, subjects, errors; never bodies).
    ("GET", "/api/admin/mail"): Rule(frozenset({"admin"})),
    ("GET", "/api/courses/{course_id}/mail"): Rule(COURSE_STAFF),
    ("POST", "/api/courses/{course_id}/invitations"): Rule(COURSE_INSTRUCTORS),
    ("POST", "/api/courses/{course_id}/members/{user_id}/invitation"): Rule(
        COURSE_INSTRUCTORS, across=NOBODY
    ),
    ("GET", "/api/account/tokens"): Rule(SIGNED_IN),
    ("POST", "/api/account/tokens"): Rule(SIGNED_IN),
    # The student's own token: anyone else's is not theirs to see (404).
    ("DELETE", "/api/account/tokens/{token_id}"): Rule(
        frozenset({"student"}), consumes=True, across=frozenset({"other_student"})
    ),
    ("PUT", "/api/account/password"): Rule(SIGNED_IN),
    ("GET", "/api/account/mail"): Rule(SIGNED_IN),
    ("PUT", "/api/account/mail"): Rule(SIGNED_IN),
    ("GET", "/api/account/sessions"): Rule(SIGNED_IN),
    # The student's own session: anyone else's is not theirs to see (404).
    ("DELETE", "/api/account/sessions/{session_id}"): Rule(frozenset({"student"}), consumes=True),
    ("GET", "/api/admin/users"): Rule(frozenset({"admin"})),
    # The configuration in force (secrets redacted) and its page shell, whose script reads the
    # admin API.
    ("GET", "/api/admin/config"): Rule(frozenset({"admin"})),
    ("GET", "/admin"): Rule(EVERYONE),
    ("POST", "/api/admin/users"): Rule(frozenset({"admin"})),
    ("PATCH", "/api/admin/users/{user_id}"): Rule(ADMIN, across=ADMIN),
    ("POST", "/api/admin/users/{user_id}/reset-link"): Rule(ADMIN, across=ADMIN),
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
    # A course acts on a person's place in it, never on a person it has no place for; a
    # password link only for an account wholly the course's (made by its enrolment, in no
    # other course, never used): the world's new student. Anyone else's is the admin's.
    ("PATCH", "/api/courses/{course_id}/members/{user_id}"): Rule(
        COURSE_INSTRUCTORS, across=NOBODY
    ),
    ("DELETE", "/api/courses/{course_id}/members/{user_id}"): Rule(
        COURSE_INSTRUCTORS, consumes=True, across=NOBODY
    ),
    ("POST", "/api/courses/{course_id}/members/{user_id}/reset-link"): Rule(
        COURSE_INSTRUCTORS, fill=(("user_id", "new_user_id"),), across=NOBODY, shared=ADMIN
    ),
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
    ("POST", f"{ASSIGNMENT}/overrides"): Rule(
        COURSE_STAFF,
        across=NOBODY,
        across_body=(("user_id", "{user_id}"), ("extra_attempts", 1)),
    ),
    ("DELETE", f"{ASSIGNMENT}/overrides/{{override_id}}"): Rule(
        COURSE_STAFF, consumes=True, across=NOBODY
    ),
    ("GET", f"{ASSIGNMENT}/problems/{{problem_id}}/attempts"): Rule(COURSE_MEMBERS),
    ("POST", f"{ASSIGNMENT}/problems/{{problem_id}}/submissions"): Rule(COURSE_MEMBERS),
    ("GET", f"{ASSIGNMENT}/submissions/me.csv"): Rule(COURSE_MEMBERS),
    # The gradebook: staff read and adjust; instructors regrade; a student reads their own.
    ("GET", "/courses/{course_id}/assignments/{assignment_id}/gradebook"): Rule(EVERYONE),
    ("GET", "/courses/{course_id}/assignments/{assignment_id}/students/{user_id}"): Rule(
        EVERYONE, across=EVERYONE
    ),
    ("GET", f"{ASSIGNMENT}/grades/me"): Rule(COURSE_MEMBERS),
    ("GET", f"{ASSIGNMENT}/gradebook"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/gradebook.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/attempts.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/canvas.csv"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/students/{{user_id}}"): Rule(COURSE_STAFF, across=NOBODY),
    # The course's own log, filtered: another course's person has nothing in it.
    ("GET", f"{ASSIGNMENT}/adjustments"): Rule(
        COURSE_STAFF, across=COURSE_STAFF, across_query="?user_id={user_id}"
    ),
    ("POST", f"{ASSIGNMENT}/adjustments"): Rule(
        COURSE_STAFF,
        across=NOBODY,
        across_body=(
            ("user_id", "{user_id}"),
            ("problem_id", PROBLEM),
            ("score", 0),
            ("comment", "across courses"),
        ),
    ),
    ("GET", f"{ASSIGNMENT}/insight"): Rule(COURSE_STAFF),
    # Comments and staff notes: the course's staff write them on the course's own students.
    ("POST", f"{ASSIGNMENT}/feedback"): Rule(
        COURSE_STAFF,
        across=NOBODY,
        across_body=(
            ("user_id", "{user_id}"),
            ("problem_id", PROBLEM),
            ("kind", "note"),
            ("body", "across courses"),
        ),
    ),
    # Texts per diagnosis: the course's; staff read them, instructors write them.
    ("GET", f"{ASSIGNMENT}/hints"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/statistics"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/statistics.csv"): Rule(COURSE_STAFF),
    ("PUT", f"{ASSIGNMENT}/hints"): Rule(COURSE_INSTRUCTORS),
    ("POST", f"{ASSIGNMENT}/regrade"): Rule(COURSE_INSTRUCTORS),
    # Similarity reports: the course's staff only, never a student (issue 39).
    (
        "GET",
        "/courses/{course_id}/assignments/{assignment_id}/problems/{problem_id}/similarity",
    ): Rule(EVERYONE),
    ("POST", f"{ASSIGNMENT}/problems/{{problem_id}}/similarity"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/problems/{{problem_id}}/similarity"): Rule(COURSE_STAFF),
    ("GET", f"{ASSIGNMENT}/problems/{{problem_id}}/similarity/pairs/{{rank}}"): Rule(COURSE_STAFF),
    # The student's own submission in an assignment: the student and the course's staff.
    # Another course's submission: its student and an admin (its own staff are not here).
    ("GET", "/api/submissions/{submission_id}"): Rule(
        COURSE_MEMBERS, across=frozenset({"other_student", "admin"})
    ),
    ("GET", "/api/submissions/{submission_id}/events"): Rule(
        COURSE_MEMBERS, across=frozenset({"other_student", "admin"})
    ),
    # Regrading work in an assignment: its course's instructors (issue 35: any deployment
    # instructor could) and admins.
    ("POST", "/api/submissions/{submission_id}/regrade"): Rule(COURSE_INSTRUCTORS, across=ADMIN),
    # Finding practice submissions (every account's) is for the catalog's staff only; no
    # course's work is in it, whoever's it is.
    ("GET", "/api/submissions"): Rule(
        CATALOG_STAFF, across=CATALOG_STAFF, across_query="?user_id={user_id}"
    ),
    ("POST", "/api/regrades"): Rule(
        CATALOG_STAFF,
        query="?problem=no-such-problem",
        across=CATALOG_STAFF,
        across_query="?user_id={user_id}",
    ),
    # A course's submissions: its staff list them; its instructors regrade them.
    # Scoped to the course's assignments: another course's person has nothing in them.
    ("GET", "/api/courses/{course_id}/submissions"): Rule(
        COURSE_STAFF, across=COURSE_STAFF, across_query="?user_id={user_id}"
    ),
    ("POST", "/api/courses/{course_id}/submissions/regrade"): Rule(
        COURSE_INSTRUCTORS,
        query="?problem=no-such-problem",
        across=COURSE_INSTRUCTORS,
        across_query="?user_id={user_id}",
    ),
}


@pytest.fixture(scope="module")
def routes() -> list[tuple[str, str]]:
    return app_routes(create_app())


def _personal_fields(app: FastAPI) -> dict[tuple[str, str], set[str]]:
    """Per route, the fields of ``PERSONAL`` it takes (path, query or JSON body), read from
    the app's OpenAPI document, so a new route that names a person is found without a list."""
    document = app.openapi()
    schemas = document.get("components", {}).get("schemas", {})
    found: dict[tuple[str, str], set[str]] = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", [])}
            for content in operation.get("requestBody", {}).get("content", {}).values():
                schema = content.get("schema", {})
                ref = schema.get("$ref", "")
                if ref:
                    schema = schemas.get(ref.rsplit("/", 1)[-1], {})
                names |= set(schema.get("properties", {}))
            if names & set(PERSONAL):
                found[(method.upper(), path)] = names & set(PERSONAL)
    return found


def test_every_route_has_a_rule(routes: list[tuple[str, str]]) -> None:
    missing = [f"{m} {p}" for m, p in routes if (m, p) not in RULES]
    assert not missing, "routes without an authorization rule in tests/authz/test_matrix.py:\n" + (
        "\n".join(missing)
    )
    stale = [f"{m} {p}" for m, p in RULES if (m, p) not in routes]
    assert not stale, "rules for routes that no longer exist:\n" + "\n".join(stale)
    personal = _personal_fields(create_app())
    # The HTML shells name a person in their path, with a rule all the same.
    personal.update({(m, p): {"user_id"} for m, p in routes if "{user_id}" in p})
    unruled = [
        f"{m} {p} (takes {', '.join(sorted(f))})"
        for (m, p), f in sorted(personal.items())
        if (m, p) in RULES and RULES[(m, p)].across is None
    ]
    assert not unruled, (
        "routes that name a person or a submission without an `across` rule (who may act on "
        "another course's):\n" + "\n".join(unruled)
    )


@pytest.fixture(scope="module")
def world_templates(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[bool], tuple[Path, World]]:
    """A world's data folder built once per module (and side), its app closed so the SQLite
    file holds everything: building one grades submissions and validates stored cases in the
    sandbox (~1 s, several on a loaded machine), and the matrix needs a fresh one per test."""
    made: dict[bool, tuple[Path, World]] = {}

    def template(across: bool) -> tuple[Path, World]:
        if across not in made:
            data = tmp_path_factory.mktemp("world-template") / "data"
            with TestClient(create_app(make_settings(data))) as api:
                made[across] = (data, build_world(api, across=across))
        return made[across]

    return template


@pytest.fixture
def worlds(
    tmp_path: Path, world_templates: Callable[[bool], tuple[Path, World]]
) -> Iterator[Callable[..., tuple[TestClient, World]]]:
    """Fresh deployments on demand (``across=True``: with the other course's side), each a copy
    of the template's data folder under an app of its own; each closed at the end of the test."""
    clients: list[TestClient] = []

    def make(across: bool = False) -> tuple[TestClient, World]:
        template, world = world_templates(across)
        data = tmp_path / f"world-{len(clients)}"
        shutil.copytree(template, data)
        api = TestClient(create_app(make_settings(data)))
        api.__enter__()
        clients.append(api)
        return api, copy.deepcopy(world)

    yield make
    for api in clients:
        api.__exit__(None, None, None)


def _call(api: TestClient, world: World, method: str, path: str, rule: Rule, who: str) -> int:
    url = world.path(path, dict(rule.fill)) + rule.query
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


# The other course's side, by the world value each field takes.
OTHER = {
    "user_id": "other_user_id",
    "submission_id": "other_submission_id",
    "override_id": "other_override_id",
    "token_id": "other_token_id",
}


def _fill(value: object, world: World, keys: dict[str, str]) -> object:
    if value == "{user_id}":
        return int(world.values[keys["user_id"]])
    return value


def _call_across(
    api: TestClient, world: World, method: str, path: str, rule: Rule, who: str
) -> tuple[bool, str]:
    """(refused, the response's text) for ``who`` calling the route on the other course's
    person, submission, override or token. Refused: 401/403/404, or 422 ``not_enrolled`` (the
    course has no such student)."""
    keys = OTHER
    url = world.path(path, keys) + world.path(rule.across_query, keys)
    body: object = None
    if rule.across_body:
        body = {k: _fill(v, world, keys) for k, v in rule.across_body}
    elif method not in ("GET", "DELETE"):
        body = {}
    response = api.request(method, url, json=body, headers=world.people.headers(who))
    assert response.status_code < 500, (method, path, who, response.text[:300])
    refused = response.status_code in REFUSALS or (
        response.status_code == 422 and "not_enrolled" in response.text
    )
    return refused, response.text


ACROSS = sorted(
    ((m, p) for (m, p), r in RULES.items() if r.across is not None), key=lambda r: (r[1], r[0])
)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("method", "path"), ACROSS)
def test_across_courses(worlds, method: str, path: str) -> None:
    """Every route that names a person or a submission, called by everyone on the other
    course's: its student (in no course of theirs but ``other_course``), her graded submission
    in an assignment of ``other_course`` on the same problem, her override there, her token.
    Then, for a person, again once this course's instructor has enrolled her by email (as the
    reported takeover began): the course now acts on her place in it, and on nothing else."""
    rule = RULES[(method, path)]
    assert rule.across is not None
    api, world = worlds(across=True)
    # What would show her work or who she is (an id the caller sent comes back in errors).
    secrets = ("other_student's work", "other_student@example.edu")
    wrong: list[str] = []
    phases = [("other course's", rule.across)]
    names_person = "{user_id}" in path + rule.across_query or any(
        v == "{user_id}" for _, v in rule.across_body
    )
    if names_person:
        phases.append(("enrolled here too", rule.allowed if rule.shared is None else rule.shared))
    for phase, allowed in phases:
        if phase == "enrolled here too":
            enrolled = api.post(
                f"/api/courses/{world.values['course_id']}/members",
                json={"email": "other_student@example.edu"},
                headers=world.people.headers("instructor"),
            )
            assert enrolled.status_code == 201, enrolled.text
        for who in sorted(ROLES, key=lambda r: r in allowed):
            if rule.consumes and who in allowed:
                api, world = worlds(across=True)
                if phase == "enrolled here too":
                    api.post(
                        f"/api/courses/{world.values['course_id']}/members",
                        json={"email": "other_student@example.edu"},
                        headers=world.people.headers("instructor"),
                    )
            refused, text = _call_across(api, world, method, path, rule, who)
            if refused == (who in allowed):
                wrong.append(f"{phase}, {who}: {'refused' if refused else 'admitted'}")
            # Whatever the status, the other course's work reaches only its owner and admins.
            shown = [secret for secret in secrets if secret in text]
            if who not in ("other_student", "admin") and phase == "other course's" and shown:
                wrong.append(f"{phase}, {who}: shown {shown}")
    assert not wrong, f"{method} {path}: " + "; ".join(wrong)
