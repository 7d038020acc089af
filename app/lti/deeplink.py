"""Deep linking: the instructor's pick becomes an ``ltiResourceLink`` content item (its custom
parameters name the assignment, its ``lineItem`` asks the platform for the assignment's
gradebook column) in a response JWT signed with the tool's key."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from joserfc import jwt
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.assignments.models import Assignment, AssignmentProblem
from app.auth.tokens import digest
from app.courses.models import DEFAULT_POINTS, Course
from app.db.base import utcnow
from app.lti import claims as c
from app.lti.keys import ALGORITHM, signing_key
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiDeepLink, LtiPlatform
from app.lti.outbox import resource_id
from app.lti.provisioning import line_item_of

PICK_LIFETIME = timedelta(minutes=30)
RESPONSE_LIFETIME_SECONDS = 300
SINGLE_PROBLEM_DAYS = 14


def begin(session: Session, context: LtiContext, user_id: int, claims: dict[str, Any]) -> str:
    """The picking form's secret; the caller commits."""
    settings = claims.get(c.DL_SETTINGS)
    if not isinstance(settings, dict) or not isinstance(settings.get("deep_link_return_url"), str):
        raise LaunchError(400, "invalid_claims", "the deep-linking request has no return URL")
    accepted = settings.get("accept_types", ["ltiResourceLink"])
    if isinstance(accepted, list) and "ltiResourceLink" not in accepted:
        raise LaunchError(400, "unsupported", "this LMS place does not accept LTI links")
    secret = secrets.token_urlsafe(32)
    data = settings.get("data")
    session.add(
        LtiDeepLink(
            id=digest(secret),
            context_id=context.id,
            user_id=user_id,
            return_url=str(settings["deep_link_return_url"])[:1000],
            data=data if isinstance(data, str) else None,
            expires_at=utcnow() + PICK_LIFETIME,
        )
    )
    return secret


@dataclass(frozen=True)
class Answer:
    return_url: str
    jwt: str


def claim(session: Session, secret: str, user_id: int | None) -> LtiDeepLink:
    row = session.get(LtiDeepLink, digest(secret))
    if row is None or user_id is None or row.user_id != user_id:
        raise LaunchError(403, "invalid_pick", "this pick was not started by you; launch again")
    if row.expires_at <= utcnow():
        raise LaunchError(400, "invalid_pick", "this pick took too long; launch again")
    done = session.execute(
        update(LtiDeepLink)
        .where(LtiDeepLink.id == row.id, LtiDeepLink.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise LaunchError(400, "invalid_pick", "this pick was already sent")
    return row


def _single_problem(session: Session, course_id: int, problem_id: str, title: str) -> Assignment:
    """A problem picked on its own: its own assignment, with the hidden cases' details cut to
    a summary (as an instructor would choose before anyone submits) and the course's default
    points, not full feedback and one point."""
    assignment = Assignment(
        course_id=course_id,
        title=title[:200],
        due_at=utcnow() + timedelta(days=SINGLE_PROBLEM_DAYS),
        feedback="summary",
    )
    session.add(assignment)
    session.flush()
    course = session.get(Course, course_id)
    points = course.default_points if course is not None else DEFAULT_POINTS
    session.add(
        AssignmentProblem(assignment_id=assignment.id, problem_id=problem_id, points=points)
    )
    session.flush()
    return assignment


def answer(
    session: Session,
    row: LtiDeepLink,
    choice: str,
    problem_titles: dict[str, str],
    launch_url: str,
) -> Answer:
    """The signed deep-linking response for ``choice`` ("assignment:<id>" or
    "problem:<id>"); the caller commits (a single problem's assignment is made here)."""
    context = session.get(LtiContext, row.context_id)
    assert context is not None
    platform = session.get(LtiPlatform, context.platform_id)
    assert platform is not None
    kind, _, value = choice.partition(":")
    custom: dict[str, str]
    if kind == "assignment" and value.isdigit():
        assignment = session.get(Assignment, int(value))
        if assignment is None or assignment.course_id != context.course_id:
            raise LaunchError(404, "invalid_pick", "that assignment is not in this course")
        custom = {"tj_assignment_id": str(assignment.id)}
    elif kind == "problem" and value in problem_titles:
        assignment = _single_problem(session, context.course_id, value, problem_titles[value])
        custom = {"tj_assignment_id": str(assignment.id), "tj_problem_id": value}
    else:
        raise LaunchError(400, "invalid_pick", "pick an assignment or a problem")
    line_item_of(session, context.id, assignment.id)
    points = sum(
        session.scalars(
            select(AssignmentProblem.points).where(AssignmentProblem.assignment_id == assignment.id)
        )
    )
    item = {
        "type": "ltiResourceLink",
        "title": assignment.title,
        "url": launch_url,
        "custom": custom,
        "lineItem": {
            "scoreMaximum": points,
            "label": assignment.title,
            "resourceId": resource_id(assignment.id),
            "tag": "tensorjudge",
        },
    }
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "iat": now,
        "exp": now + RESPONSE_LIFETIME_SECONDS,
        "nonce": secrets.token_urlsafe(16),
        c.DEPLOYMENT_ID: context.deployment_id,
        c.MESSAGE_TYPE: c.DEEP_LINKING_RESPONSE,
        c.VERSION: c.LTI_VERSION,
        c.DL_CONTENT_ITEMS: [item],
    }
    if row.data is not None:
        claims[c.DL_DATA] = row.data
    key = signing_key(session)
    token = jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, claims, key)
    return Answer(row.return_url, token)
