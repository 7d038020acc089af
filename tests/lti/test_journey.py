"""The whole LTI journey against the mock platform, on SQLite and PostgreSQL: the instructor
deep-links a problem, a student launches and lands on it signed in and enrolled, submits a
wrong then a right solution, and the platform receives each current assignment score on the
one line item, with the score media type; NRPS enrolls the student who never launched."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.assignments.models import Assignment
from app.courses.models import Membership
from app.lti.models import LtiContext, LtiScoreSend, LtiUser
from app.lti.outbox import send_due
from app.lti.sender import policy_of
from app.submissions.models import Submission
from tests.lti.conftest import Tool
from tests.support.codes import CORRECT, WRONG
from tests.support.lti_platform import SCORE_MEDIA, form_fields

PROBLEM = "multi-head-attention"


def deep_link(tool: Tool, choice: str) -> str:
    """The instructor adds ``choice`` through deep linking: the platform's new link id."""
    browser = tool.browser()
    pick = tool.first_launch(browser, "ines", "deep-link")
    assert pick.status_code == 200, pick.text
    assert "Add TensorJudge to Machine Learning 101" in pick.text
    _, fields = form_fields(pick.text)
    answer = browser.post("/lti/deep-link", data={"secret": fields["secret"], "choice": choice})
    assert answer.status_code == 200, answer.text
    action, posted = form_fields(answer.text)
    assert action == f"{tool.platform.url}/deep-link-return"
    returned = httpx.post(action, data=posted)
    assert returned.status_code == 200, returned.text
    (link_id,) = [k for k in tool.platform.links]
    return link_id


def csrf(browser: TestClient) -> dict[str, str]:
    me = browser.get("/api/auth/me")
    assert me.status_code == 200, me.text
    return {"X-CSRF-Token": me.json()["csrf_token"]}


def submit(browser: TestClient, path: str, code: str) -> dict[str, object]:
    response = browser.post(
        f"/api{path}/submissions",
        params={"wait": 30},
        json={"code": code, "mode": "submit"},
        headers=csrf(browser),
    )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_deep_link_launch_submit_and_scores_back(tool: Tool) -> None:
    platform = tool.platform
    link_id = deep_link(tool, f"problem:{PROBLEM}")
    (answer,) = platform.deep_link_answers
    assert answer["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-platform-data"
    link = platform.links[link_id]
    assignment_id = int(link.custom["tj_assignment_id"])
    assert link.custom["tj_problem_id"] == PROBLEM
    assert len(platform.line_items) == 1  # made by the platform from the deep link's lineItem
    with tool.sessions() as session:
        # Hidden cases cut to a summary until the instructor chooses otherwise.
        assert session.get(Assignment, assignment_id).feedback == "summary"  # type: ignore[union-attr]

    student = tool.browser()
    landed = tool.launch(student, "sam", link_id)
    assert landed.status_code == 303, landed.text
    with tool.sessions() as session:
        context = session.scalars(select(LtiContext)).one()
        sam = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-sam")).one()
        carol = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-carol")).one()
        roles = {
            m.user_id: m.role
            for m in session.scalars(
                select(Membership).where(Membership.course_id == context.course_id)
            )
        }
    path = f"/courses/{context.course_id}/assignments/{assignment_id}/problems/{PROBLEM}"
    assert landed.headers["location"] == path
    assert roles[sam.user_id] == "student"
    # NRPS on launch: Carol never launched, yet she is in the course (and the gradebook).
    assert roles[carol.user_id] == "student"
    assert student.get("/api/auth/me").json()["user"]["id"] == sam.user_id

    wrong = submit(student, path, WRONG)
    assert wrong["verdict"] == "wrong_answer"
    with tool.sessions() as session:
        # Written with the grading, before anything was sent.
        (queued,) = session.scalars(select(LtiScoreSend)).all()
        assert (queued.status, queued.user_id, queued.submission_id) == (
            "pending", sam.user_id, wrong["id"]
        )  # fmt: skip
    assert send_due(tool.sessions, policy_of(tool.api.app.state.settings)) == 1  # type: ignore[attr-defined]
    right = submit(student, path, CORRECT)
    assert right["verdict"] == "accepted"
    assert send_due(tool.sessions, policy_of(tool.api.app.state.settings)) == 1  # type: ignore[attr-defined]

    first, second = platform.scores
    (line_item,) = platform.line_items
    assert first.path == second.path == f"{line_item.removeprefix(platform.url)}/scores"
    assert first.content_type == second.content_type == SCORE_MEDIA
    assert first.body["userId"] == second.body["userId"] == "sub-sam"
    # A deep-linked problem is worth the course's default points (10), not one point.
    assert first.body["scoreMaximum"] == second.body["scoreMaximum"] == 10.0
    assert first.body["scoreGiven"] == round(10 * float(wrong["score"]), 6) < 10.0  # type: ignore[arg-type]
    assert second.body["scoreGiven"] == 10.0
    for sent in (first, second):
        assert sent.body["gradingProgress"] == "FullyGraded"
        assert sent.body["activityProgress"] == "Submitted"
        assert sent.body["timestamp"].endswith("Z")
    assert first.body["timestamp"] < second.body["timestamp"]
    assert len(platform.line_items) == 1  # reused, never duplicated

    # Staff land on the gradebook.
    staff = tool.launch(tool.browser(), "ines", link_id)
    assert staff.headers["location"] == (
        f"/courses/{context.course_id}/assignments/{assignment_id}/gradebook"
    )
    with tool.sessions() as session:
        graded = session.scalars(select(Submission).order_by(Submission.created_at)).all()
        assert [s.graded_attempt for s in graded] == [1, 2]
