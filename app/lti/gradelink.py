"""Grades of web-made assignments to the LMS: an instructor links an assignment to a line item
of a linked LMS course (one picked from the platform's list through AGS, or one the sender
makes on the first score), and the current scores of its graded students go into the score
outbox at once; later gradings follow by ``enqueue_scores``."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment
from app.core.errors import ApiError
from app.courses.models import Membership
from app.db.base import utcnow
from app.lti import claims as c
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform, LtiScoreSend, LtiUser
from app.lti.outbox import PENDING
from app.lti.provisioning import line_item_of
from app.lti.schemas import (
    LineItemCurrent,
    LineItemLink,
    LineItemLinkOut,
    LineItemState,
    LmsCourse,
    LmsLineItem,
)
from app.lti.services import PlatformError, access_token, line_items
from app.submissions.models import Submission


@dataclass(frozen=True)
class _Ags:
    context_id: int
    lineitems_url: str
    platform: LtiPlatform


def _ags_of(session: Session, context: LtiContext) -> _Ags:
    if context.lineitems_url is None:
        raise ApiError(409, "no_ags", "this LMS course offers no gradebook service (AGS)")
    platform = session.get(LtiPlatform, context.platform_id)
    assert platform is not None
    session.expunge(platform)
    return _Ags(context.id, context.lineitems_url, platform)


def _contexts(session: Session, course_id: int) -> list[LtiContext]:
    return list(
        session.scalars(
            select(LtiContext).where(LtiContext.course_id == course_id).order_by(LtiContext.id)
        )
    )


def _fetch(sessions: sessionmaker[Session], ags: _Ags) -> list[dict[str, object]]:
    try:
        token = access_token(sessions, ags.platform, (c.SCOPE_LINEITEM,))
        return line_items(ags.lineitems_url, token, {})
    except PlatformError as exc:
        raise ApiError(
            502, "lms_unavailable", f"the LMS did not list its line items: {exc}"
        ) from None


def list_line_items(sessions: sessionmaker[Session], course_id: int) -> list[LmsLineItem]:
    """Every line item of every LMS course linked to this course, and what it is linked to."""
    with sessions() as session:
        found = [
            _ags_of(session, ctx) for ctx in _contexts(session, course_id) if ctx.lineitems_url
        ]
        linked = {
            (ctx_id, url): assignment
            for ctx_id, url, assignment in session.execute(
                select(LtiLineItem.context_id, LtiLineItem.url, LtiLineItem.assignment_id).where(
                    LtiLineItem.context_id.in_([a.context_id for a in found])
                )
            )
        }
    out: list[LmsLineItem] = []
    for ags in found:
        for item in _fetch(sessions, ags):
            url = str(item["id"])
            maximum = item.get("scoreMaximum")
            out.append(
                LmsLineItem(
                    context_id=ags.context_id,
                    id=url,
                    label=str(item.get("label") or "")[:200],
                    score_maximum=float(maximum) if isinstance(maximum, int | float) else None,
                    resource_id=None
                    if item.get("resourceId") is None
                    else str(item.get("resourceId"))[:255],
                    assignment_id=linked.get((ags.context_id, url)),
                )
            )
    return out


def _assignment_of(session: Session, course_id: int, assignment_id: int) -> Assignment:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.course_id != course_id:
        raise ApiError(404, "not_found", f"no assignment {assignment_id}", "assignment_id")
    return assignment


def link_state(
    sessions: sessionmaker[Session], course_id: int, assignment_id: int
) -> LineItemState:
    """The LMS courses linked here and the assignment's links, without asking the LMS."""
    with sessions() as session:
        _assignment_of(session, course_id, assignment_id)
        contexts = _contexts(session, course_id)
        names = dict(
            session.execute(
                select(LtiPlatform.id, LtiPlatform.name).where(
                    LtiPlatform.id.in_({ctx.platform_id for ctx in contexts})
                )
            ).all()
        )
        links = session.scalars(
            select(LtiLineItem)
            .where(
                LtiLineItem.assignment_id == assignment_id,
                LtiLineItem.context_id.in_([ctx.id for ctx in contexts]),
            )
            .order_by(LtiLineItem.context_id)
        ).all()
        return LineItemState(
            lms_courses=[
                LmsCourse(
                    context_id=ctx.id,
                    platform=names.get(ctx.platform_id, ""),
                    lms_context=ctx.context_id,
                    ags=ctx.lineitems_url is not None,
                )
                for ctx in contexts
            ],
            links=[
                LineItemCurrent(context_id=row.context_id, line_item_url=row.url) for row in links
            ],
        )


def link_assignment(
    sessions: sessionmaker[Session], course_id: int, assignment_id: int, body: LineItemLink
) -> LineItemLinkOut:
    with sessions() as session:
        _assignment_of(session, course_id, assignment_id)
        contexts = _contexts(session, course_id)
        if body.context_id is not None:
            contexts = [ctx for ctx in contexts if ctx.id == body.context_id]
            if not contexts:
                raise ApiError(
                    404, "not_found", "no such LMS course linked to this course", "context_id"
                )
        if not contexts:
            raise ApiError(409, "no_lms_course", "no LMS course is linked to this course")
        if len(contexts) > 1:
            raise ApiError(
                409, "several_lms_courses", "several LMS courses are linked: name context_id"
            )
        ags = _ags_of(session, contexts[0])
    url = None if body.line_item_url is None else str(body.line_item_url)
    if url is not None and url not in {str(i["id"]) for i in _fetch(sessions, ags)}:
        # Scores (and the tool's access token) go only to the platform's own line items.
        raise ApiError(
            422, "not_a_line_item", "that is not a line item of the LMS course", "line_item_url"
        )
    with sessions() as session:
        row = line_item_of(session, ags.context_id, assignment_id)
        if url is not None:
            taken = session.scalar(
                select(LtiLineItem.assignment_id).where(
                    LtiLineItem.context_id == ags.context_id,
                    LtiLineItem.url == url,
                    LtiLineItem.id != row.id,
                )
            )
            if taken is not None:
                raise ApiError(
                    409, "line_item_taken", f"that line item is linked to assignment {taken}"
                )
        # None: the tool's own column, found again by its resourceId or made on the first score.
        row.url = url
        queued = _enqueue_graded(session, row.id, ags.platform.id, assignment_id, course_id)
        session.commit()
        return LineItemLinkOut(
            context_id=ags.context_id,
            assignment_id=assignment_id,
            line_item_url=row.url,
            queued=queued,
        )


def _enqueue_graded(
    session: Session, line_item_id: int, platform_id: int, assignment_id: int, course_id: int
) -> int:
    """One outbox row per student of the course known to the platform with a graded attempt:
    the sender sends each one's current score."""
    students = session.scalars(
        select(Submission.user_id)
        .join(LtiUser, LtiUser.user_id == Submission.user_id)
        .join(
            Membership,
            (Membership.user_id == Submission.user_id) & (Membership.course_id == course_id),
        )
        .where(
            Submission.assignment_id == assignment_id,
            Submission.graded_attempt.is_not(None),
            LtiUser.platform_id == platform_id,
            Membership.role == "student",
        )
        .distinct()
    ).all()
    now = utcnow()
    for user_id in students:
        if user_id is None:
            continue
        session.add(
            LtiScoreSend(
                line_item_id=line_item_id,
                user_id=user_id,
                status=PENDING,
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
        )
    return len([u for u in students if u is not None])
