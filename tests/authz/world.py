"""One small deployment with something behind every route: two courses with a person of every
role, an assignment, a graded submission of the student in it, an override, a stored case of
the catalog and one of the course, and a student the course's enrolment made who has never
signed in (``new_user_id``). Path parameters of the routes are filled from it.

``across=True`` adds the other course's side (issue 35): an assignment of ``other_course`` on
the same problem, with a graded submission of ``other_student`` in it and an override for
her; the ``other_*`` values name them, for the course's staff to try to act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.assignments.models import Assignment, AssignmentProblem, Override
from app.auth.models import ApiToken, WebSession
from app.auth.sessions import session_handle, start_session
from app.db.base import utcnow
from app.lti.models import LtiPlatform
from app.submissions.models import Submission
from tests.support.people import People, seed_people

PROBLEM = "multi-head-attention"


@dataclass
class World:
    people: People
    values: dict[str, str] = field(default_factory=dict)

    def path(self, template: str, keys: dict[str, str] | None = None) -> str:
        """``template`` filled from the values; ``keys`` maps a field to the value it takes
        instead of its own (``{"user_id": "new_user_id"}``)."""
        values = {**self.values, **{k: self.values[v] for k, v in (keys or {}).items()}}
        return template.format(**values)


def build_world(api: TestClient, *, across: bool = False) -> World:
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    people = seed_people(sessions)
    now = utcnow()
    with sessions() as session:
        assignment = _open_assignment(session, people.courses["course"], "Attention")
        override = Override(
            assignment_id=assignment.id,
            user_id=people.users["student"],
            until=now + timedelta(days=9),
        )
        session.add(override)
        session.flush()
        assignment_id = assignment.id
        token = session.query(ApiToken).filter_by(user_id=people.users["student"]).one()
        start_session(session, people.users["student"], timedelta(hours=1))
        browser = session.query(WebSession).filter_by(user_id=people.users["student"]).one()
        platform = LtiPlatform(
            name="LMS",
            issuer="https://lms.example.edu",
            client_id="tensorjudge",
            auth_login_url="https://lms.example.edu/auth",
            auth_token_url="https://lms.example.edu/token",
            keyset_url="https://lms.example.edu/jwks",
        )
        session.add(platform)
        session.flush()
        values = {
            "problem_id": PROBLEM,
            "course_id": str(people.courses["course"]),
            "assignment_id": str(assignment.id),
            "user_id": str(people.users["student"]),
            "override_id": str(override.id),
            "token_id": str(token.id),
            "session_id": session_handle(browser),
            "filename": _wheel_name(),
            "code": "JOIN-COURSE",
            "secret": "not-a-reset-secret",
            "platform_id": str(platform.id),
            "rank": "1",
        }
        session.commit()
    values["submission_id"] = _graded_submission(api, people, assignment_id, "student")
    values["new_user_id"] = _enrolled(api, people, "new.student@example.edu")
    if across:
        values.update(_other_course(api, people))
    course = values["course_id"]
    for key, scope in (("case_id", "/api"), ("course_case_id", f"/api/courses/{course}")):
        case = api.post(
            f"{scope}/problems/{PROBLEM}/test-cases",
            json={"name": f"authz-{key}", "inputs": _case_inputs()},
            headers=people.headers("admin"),
        )
        assert case.status_code == 201, case.text
        values[key] = str(case.json()["id"])
    return World(people=people, values=values)


def _open_assignment(session: Session, course_id: int, title: str) -> Assignment:
    """An assignment of the course on ``PROBLEM``, open for a week."""
    now = utcnow()
    assignment = Assignment(
        course_id=course_id,
        title=title,
        release_at=now - timedelta(days=1),
        due_at=now + timedelta(days=7),
    )
    session.add(assignment)
    session.flush()
    session.add(AssignmentProblem(assignment_id=assignment.id, problem_id=PROBLEM))
    return assignment


def _case_inputs() -> dict[str, object]:
    from tests.instructors.conftest import as_json, case_inputs

    return as_json(case_inputs())


def _wheel_name() -> str:
    """The client's built wheel (``make client-wheel``), served to everyone."""
    from app.core.config import get_settings

    wheels = sorted(get_settings().client_wheel_dir.glob("*.whl"))
    return wheels[0].name if wheels else "tensorjudge_client-0.1.0-py3-none-any.whl"


def _graded_submission(api: TestClient, people: People, assignment_id: int, who: str) -> str:
    """A submission of ``who`` in the assignment, graded for real (so its event stream
    ends), as their first graded attempt."""
    made = api.post(
        f"/api/problems/{PROBLEM}/submissions?wait=30",
        json={"code": f"def multi_head_attention(*args):\n    return 0  # {who}'s work\n"},
        headers=people.headers(who),
    )
    assert made.status_code == 200, made.text
    submission_id: str = made.json()["id"]
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row is not None
        row.user_id = people.users[who]
        row.assignment_id = assignment_id
        row.graded_attempt = 1
        session.commit()
    return submission_id


def _enrolled(api: TestClient, people: People, email: str) -> str:
    """A student enrolled by a new email: the course's enrolment makes her account."""
    made = api.post(
        f"/api/courses/{people.courses['course']}/members",
        json={"email": email, "name": "New Student"},
        headers=people.headers("instructor"),
    )
    assert made.status_code == 201, made.text
    return str(made.json()["user_id"])


def _other_course(api: TestClient, people: People) -> dict[str, str]:
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    other = people.users["other_student"]
    with sessions() as session:
        assignment = _open_assignment(session, people.courses["other_course"], "Elsewhere")
        override = Override(assignment_id=assignment.id, user_id=other, extra_attempts=1)
        session.add(override)
        session.flush()
        token = session.query(ApiToken).filter_by(user_id=other).one()
        values = {
            "other_user_id": str(other),
            "other_override_id": str(override.id),
            "other_token_id": str(token.id),
        }
        assignment_id = assignment.id
        session.commit()
    values["other_submission_id"] = _graded_submission(api, people, assignment_id, "other_student")
    return values
