"""The score outbox and its sender against the mock platform: an LMS outage of an hour delays
but loses no score; scores hidden by the feedback policy go out only once published; the line
item is made once (found again by its resourceId, never duplicated); a course's staff and the
admins see what is pending or failed."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.assignments.models import Assignment
from app.auth.accounts import create_user
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.lti.models import LtiContext, LtiLineItem, LtiScoreSend, LtiUser
from app.lti.outbox import score_of, send_due
from app.lti.sender import policy_of
from app.submissions.models import Submission
from tests.gradebook.factories import (
    MHA,
    T0,
    add_attempt,
    attempt_row,
    being_graded,
    make_assignment,
    report,
)
from tests.lti.conftest import Tool
from tests.lti.test_journey import PROBLEM, deep_link, submit
from tests.support.codes import CORRECT, WRONG


def send(tool: Tool) -> int:
    return send_due(tool.sessions, policy_of(tool.api.app.state.settings))  # type: ignore[attr-defined]


def due_now(tool: Tool) -> None:
    """The retry's wait is over (the backoff's clock, without waiting for it)."""
    with tool.sessions() as session:
        session.execute(update(LtiScoreSend).values(next_attempt_at=utcnow()))
        session.commit()


def launched(tool: Tool) -> tuple[TestClient, str, int, int]:
    """A deep-linked problem the student has launched: (their browser, the problem's API path,
    the course, the assignment)."""
    link_id = deep_link(tool, f"problem:{PROBLEM}")
    assignment_id = int(tool.platform.links[link_id].custom["tj_assignment_id"])
    student = tool.browser()
    landed = tool.launch(student, "sam", link_id)
    assert landed.status_code == 303, landed.text
    with tool.sessions() as session:
        course_id = session.scalars(select(LtiContext.course_id)).one()
    return student, landed.headers["location"], course_id, assignment_id


def rows(tool: Tool) -> list[LtiScoreSend]:
    with tool.sessions() as session:
        return list(session.scalars(select(LtiScoreSend).order_by(LtiScoreSend.id)))


def test_an_hour_long_outage_delays_but_loses_no_score(tool: Tool) -> None:
    student, path, course_id, _ = launched(tool)
    tool.platform.down = True
    submit(student, path, WRONG)
    submit(student, path, CORRECT)
    assert send(tool) == 0
    assert tool.platform.scores == []
    (first, second) = rows(tool)
    assert first.status == second.status == "pending"
    assert first.attempts == 1 and "503" in (first.last_error or "")
    status = tool.api.get(
        f"/api/courses/{course_id}/lti/scores", headers=tool.admin, params={"status": "pending"}
    )
    assert status.status_code == 200, status.text
    assert status.json()["counts"] == {"pending": 2}
    # An hour of refusals later (the sender kept retrying), the rows are still waiting.
    with tool.sessions() as session:
        session.execute(
            update(LtiScoreSend).values(created_at=utcnow() - timedelta(hours=1, minutes=5))
        )
        session.commit()
    due_now(tool)
    assert send(tool) == 0
    assert {(r.status, r.attempts) for r in rows(tool)} == {("pending", 2)}
    tool.platform.down = False
    due_now(tool)
    assert send(tool) == 1  # both attempts collapse into the current score
    (sent,) = tool.platform.scores
    assert sent.body["scoreGiven"] == sent.body["scoreMaximum"] == 10.0  # the course default
    assert sent.body["gradingProgress"] == "FullyGraded"
    assert {(r.status, r.score_given) for r in rows(tool)} == {("sent", 10.0)}
    assert send(tool) == 0  # nothing is sent twice


def test_a_score_the_lms_never_takes_is_marked_failed(tool: Tool) -> None:
    student, path, _, _ = launched(tool)
    tool.platform.down = True
    submit(student, path, CORRECT)
    with tool.sessions() as session:
        session.execute(update(LtiScoreSend).values(created_at=utcnow() - timedelta(days=4)))
        session.commit()
    send(tool)
    (row,) = rows(tool)
    assert row.status == "failed"
    listed = tool.api.get("/api/lti/scores", params={"status": "failed"}, headers=tool.admin)
    assert [i["id"] for i in listed.json()["items"]] == [row.id]


def test_hidden_scores_go_out_only_when_published(tool: Tool) -> None:
    student, path, _, assignment_id = launched(tool)
    with tool.sessions() as session:
        session.execute(
            update(Assignment).where(Assignment.id == assignment_id).values(hide_scores=True)
        )
        session.commit()
    submit(student, path, CORRECT)
    assert send(tool) == 1
    (held,) = tool.platform.scores
    assert held.body["gradingProgress"] == "PendingManual"
    assert "scoreGiven" not in held.body
    assert [r.status for r in rows(tool)] == ["held"]
    assert send(tool) == 0  # still hidden: nothing more
    with tool.sessions() as session:
        session.execute(
            update(Assignment)
            .where(Assignment.id == assignment_id)
            .values(scores_published_at=utcnow())
        )
        session.commit()
    assert send(tool) == 1
    published = tool.platform.scores[-1]
    assert published.body["scoreGiven"] == 10.0  # a deep-linked problem: the course default
    assert published.body["gradingProgress"] == "FullyGraded"
    assert [r.status for r in rows(tool)] == ["sent"]


def test_the_line_item_is_made_once_and_found_again(tool: Tool) -> None:
    student, path, _, assignment_id = launched(tool)
    # As if the link had been made without a line item: the sender must make (or find) it.
    tool.platform.line_items.clear()
    with tool.sessions() as session:
        session.execute(update(LtiLineItem).values(url=None))
        session.commit()
    submit(student, path, WRONG)
    assert send(tool) == 1
    (made,) = tool.platform.line_items.values()
    assert made["resourceId"] == f"tj-assignment-{assignment_id}"
    assert made["scoreMaximum"] == 10.0  # the course default points
    # A crash after making it, before storing its URL: the next sender finds it again.
    with tool.sessions() as session:
        session.execute(update(LtiLineItem).values(url=None))
        session.commit()
    submit(student, path, CORRECT)
    assert send(tool) == 1
    assert len(tool.platform.line_items) == 1
    # Relaunches never add a line item row either.
    tool.launch(tool.browser(), "sam", next(iter(tool.platform.links)))
    with tool.sessions() as session:
        assert len(session.scalars(select(LtiLineItem)).all()) == 1
        assert session.scalars(select(LtiUser)).all()


def test_the_outbox_is_for_staff_and_admins(tool: Tool) -> None:
    student, _, course_id, _ = launched(tool)
    refused = student.get(f"/api/courses/{course_id}/lti/scores")
    assert refused.status_code == 403
    assert student.get("/api/lti/scores").status_code == 403


def test_the_score_says_pending_while_an_attempt_is_being_graded(tool: Tool) -> None:
    """AGS ``gradingProgress``: Pending while any of the student's attempts is queued or
    running (the score may still change), FullyGraded once every one is done."""
    with tool.sessions() as session:
        course = Course(title="AGS", join_code="JOIN-AGS")
        session.add(course)
        session.flush()
        student = create_user(session, "pat@example.edu", "Pat", "member").id
        session.add(Membership(course_id=course.id, user_id=student, role="student"))
        session.commit()
        course_id = course.id
    a = make_assignment(tool.sessions, course_id, due_at=T0 + timedelta(days=30))
    add_attempt(tool.sessions, a, student, MHA, 1, T0, 0.5)
    running = being_graded(attempt_row(a, student, MHA, 2, T0 + timedelta(hours=1), None))
    with tool.sessions() as session:
        session.add(running)
        session.commit()
        queued = running.id

    def ags_score() -> dict[str, object]:
        with tool.sessions() as session:
            assignment = session.get(Assignment, a)
            assert assignment is not None
            found = score_of(session, assignment, student, "sub-pat", T0 + timedelta(days=1))
        assert found is not None
        return found[0]

    graded = ags_score()
    assert graded["gradingProgress"] == "Pending" and graded["activityProgress"] == "Submitted"
    assert graded["scoreGiven"] == 5.0 and graded["scoreMaximum"] == 15.0
    with tool.sessions() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == queued)
            .values(status="done", verdict="accepted", score=1.0, report=report("accepted", 1.0))
        )
        session.commit()
    done = ags_score()
    assert done["gradingProgress"] == "FullyGraded" and done["scoreGiven"] == 10.0
