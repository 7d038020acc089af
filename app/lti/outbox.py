"""The score outbox: what the grading transaction writes (``enqueue_scores``) and what the
sender does with it (``send_due``).

A row says "this student's score on this line item changed"; the sender reads the student's
current assignment score (``app.gradebook.scores``, the policy and late credit) when it sends,
so rows of one student collapse into one send. A send is retried with exponential backoff
while the platform is down, for up to ``give_up_after``; sending the same score twice is
harmless (the platform keeps the newest ``timestamp``), so a crash between a send and its
commit only repeats it. One sender at a time holds a line item (``claimed_until``), so two
processes never both make its line item."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment
from app.assignments.policy import Dates
from app.core.retry import SendPolicy
from app.db.base import utcnow
from app.gradebook.scores import compute, scores_visible
from app.lti import claims as c
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform, LtiScoreSend, LtiUser
from app.lti.services import (
    PlatformError,
    access_token,
    create_line_item,
    find_line_item,
    post_score,
)

log = logging.getLogger(__name__)

SCOPES = (c.SCOPE_LINEITEM, c.SCOPE_SCORE)
PENDING, HELD, SENT, FAILED = "pending", "held", "sent", "failed"


def resource_id(assignment_id: int) -> str:
    return f"tj-assignment-{assignment_id}"


def enqueue_scores(session: Session, submission: Any) -> None:
    """Called inside the transaction that stores a grading: one outbox row per LMS line item
    of the submission's assignment that knows this student. The caller commits."""
    if submission.assignment_id is None or submission.user_id is None:
        return
    if submission.graded_attempt is None:
        return
    line_items = session.scalars(
        select(LtiLineItem.id)
        .join(LtiContext, LtiContext.id == LtiLineItem.context_id)
        .join(
            LtiUser,
            and_(
                LtiUser.platform_id == LtiContext.platform_id,
                LtiUser.user_id == submission.user_id,
            ),
        )
        .where(LtiLineItem.assignment_id == submission.assignment_id)
    ).all()
    now = utcnow()
    for line_item_id in line_items:
        session.add(
            LtiScoreSend(
                line_item_id=line_item_id,
                user_id=submission.user_id,
                submission_id=submission.id,
                status=PENDING,
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
        )


def _closed(dates: Dates, now: datetime) -> bool:
    last = dates.deadlines[-1].until if dates.deadlines else dates.due_at
    return dates.after_close == "closed" and now > last


def _timestamp(now: datetime) -> str:
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def score_of(
    session: Session, assignment: Assignment, user_id: int, subject: str, now: datetime
) -> tuple[dict[str, Any], float | None] | None:
    """The AGS score of the student now, and the score it gives (None: held back while the
    feedback policy hides scores); None when they are not a student of the course."""
    book = compute(session, assignment, {}, user_id=user_id)
    if not book.rows:
        return None
    row = book.rows[0]
    pending = any(cell.pending for cell in row.cells)
    attempted = any(cell.attempts_used for cell in row.cells)
    score: dict[str, Any] = {
        "userId": subject,
        "timestamp": _timestamp(now),
        "activityProgress": (
            "Completed" if _closed(row.dates, now) else "Submitted" if attempted else "Initialized"
        ),
    }
    if not scores_visible(assignment, now):
        # Graded, but the score waits for its publication: the LMS shows it as pending.
        score["gradingProgress"] = "PendingManual"
        return score, None
    score["gradingProgress"] = "Pending" if pending else "FullyGraded"
    score["scoreGiven"] = round(row.total, 6)
    score["scoreMaximum"] = book.max_total
    return score, score["scoreGiven"]


def release_published(session: Session, now: datetime) -> None:
    """Held scores whose assignment has published its scores go out now."""
    published = (
        select(LtiLineItem.id)
        .join(Assignment, Assignment.id == LtiLineItem.assignment_id)
        .where(
            or_(
                Assignment.hide_scores.is_(False),
                and_(
                    Assignment.scores_published_at.is_not(None),
                    Assignment.scores_published_at <= now,
                ),
            )
        )
    )
    session.execute(
        update(LtiScoreSend)
        .where(LtiScoreSend.status == HELD, LtiScoreSend.line_item_id.in_(published))
        .values(status=PENDING, next_attempt_at=now)
        .execution_options(synchronize_session=False)
    )


def _claim(session: Session, line_item_id: int, now: datetime, lease: timedelta) -> bool:
    done = session.execute(
        update(LtiLineItem)
        .where(
            LtiLineItem.id == line_item_id,
            or_(LtiLineItem.claimed_until.is_(None), LtiLineItem.claimed_until < now),
        )
        .values(claimed_until=now + lease)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return bool(done.rowcount)  # type: ignore[attr-defined]


def send_due(sessions: sessionmaker[Session], policy: SendPolicy) -> int:
    """One pass over what is due: the number of scores the platform accepted."""
    now = utcnow()
    with sessions() as session:
        release_published(session, now)
        session.commit()
        due = session.scalars(
            select(LtiScoreSend.line_item_id)
            .where(LtiScoreSend.status == PENDING, LtiScoreSend.next_attempt_at <= now)
            .distinct()
        ).all()
    sent = 0
    for line_item_id in due:
        with sessions() as session:
            if not _claim(session, line_item_id, now, policy.lease):
                continue
            try:
                sent += _send_line_item(sessions, session, line_item_id, policy)
            finally:
                session.rollback()
                session.execute(
                    update(LtiLineItem)
                    .where(LtiLineItem.id == line_item_id)
                    .values(claimed_until=None)
                    .execution_options(synchronize_session=False)
                )
                session.commit()
    return sent


def _ensure_url(
    session: Session, item: LtiLineItem, context: LtiContext, token: str, assignment: Assignment
) -> str:
    if item.url is not None:
        return item.url
    if context.lineitems_url is None:
        raise PlatformError("the LMS course has no line items endpoint (AGS not enabled)")
    rid = resource_id(assignment.id)
    # A line item this tool made before a crash, or the platform from a deep link, is reused.
    url = find_line_item(context.lineitems_url, token, rid)
    if url is None:
        maximum = compute(session, assignment, {}, user_id=-1).max_total
        url = create_line_item(context.lineitems_url, token, rid, assignment.title, maximum)
    item.url = url
    session.commit()
    return url


def _send_line_item(
    sessions: sessionmaker[Session], session: Session, line_item_id: int, policy: SendPolicy
) -> int:
    now = utcnow()
    item = session.get(LtiLineItem, line_item_id)
    if item is None:
        return 0
    context = session.get(LtiContext, item.context_id)
    assignment = session.get(Assignment, item.assignment_id)
    assert context is not None and assignment is not None
    platform = session.get(LtiPlatform, context.platform_id)
    assert platform is not None
    rows = session.scalars(
        select(LtiScoreSend)
        .where(
            LtiScoreSend.line_item_id == line_item_id,
            LtiScoreSend.status == PENDING,
            LtiScoreSend.next_attempt_at <= now,
        )
        .order_by(LtiScoreSend.id)
    ).all()
    by_user: dict[int, list[LtiScoreSend]] = defaultdict(list)
    for row in rows:
        by_user[row.user_id].append(row)
    sent = 0
    try:
        token = access_token(sessions, platform, SCOPES)
        url = _ensure_url(session, item, context, token, assignment)
        for user_id, mine in by_user.items():
            subject = session.scalar(
                select(LtiUser.subject).where(
                    LtiUser.platform_id == platform.id, LtiUser.user_id == user_id
                )
            )
            found = (
                None if subject is None else score_of(session, assignment, user_id, subject, now)
            )
            if found is not None:
                post_score(url, token, found[0])
                sent += 1
            for row in mine:
                row.attempts += 1
                row.status = SENT if found is None or found[1] is not None else HELD
                row.score_given = None if found is None else found[1]
                row.sent_at = utcnow()
                row.last_error = None
            session.commit()
    except PlatformError as exc:
        log.warning("LTI score send to %s failed: %s", platform.issuer, exc)
        for row in session.scalars(
            select(LtiScoreSend).where(
                LtiScoreSend.line_item_id == line_item_id,
                LtiScoreSend.status == PENDING,
                LtiScoreSend.next_attempt_at <= now,
            )
        ):
            row.attempts += 1
            row.last_error = str(exc)[:1000]
            row.next_attempt_at = utcnow() + policy.backoff(row.attempts)
            if utcnow() - row.created_at > policy.give_up_after:
                row.status = FAILED
        session.commit()
    return sent
