"""Comments (the student reads them) and notes (only the course's staff do): reading the ones
in force and writing a new one. A comment and a note are two fields of a target (a student's
problem, or one submission of it): the newest row of each wins, an empty body clears it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.auth.models import User
from app.gradebook.markdown import render
from app.gradebook.models import FeedbackText
from app.gradebook.schemas import FeedbackOut

# (user_id, problem_id, submission_id or None, kind)
Target = tuple[int, str, str | None, str]


def names_of(session: Session, ids: Iterable[int | None]) -> dict[int, str]:
    wanted = {i for i in ids if i is not None}
    if not wanted:
        return {}
    return dict(session.execute(select(User.id, User.name).where(User.id.in_(wanted))).all())


def feedback_out(row: FeedbackText, names: dict[int, str]) -> FeedbackOut:
    return FeedbackOut(
        id=row.id,
        user_id=row.user_id,
        problem_id=row.problem_id,
        submission_id=row.submission_id,
        kind=row.kind,
        body=row.body,
        html=render(row.body),
        created_by=row.created_by,
        created_by_name=names.get(row.created_by) if row.created_by else None,
        created_at=row.created_at,
    )


def in_force(
    session: Session,
    assignment_id: int,
    *,
    user_id: int | None = None,
    kinds: Sequence[str] = ("comment", "note"),
) -> dict[Target, FeedbackOut]:
    """The texts in force of an assignment (of one student), by target; cleared ones are not
    there. ``kinds``: a student's reads ask for comments only, so a note never leaves the
    database for them."""
    f = FeedbackText
    stmt = select(f).where(f.assignment_id == assignment_id, f.kind.in_(kinds))
    if user_id is not None:
        stmt = stmt.where(f.user_id == user_id)
    newest: dict[Target, FeedbackText] = {}
    for row in session.scalars(stmt.order_by(f.id)):
        newest[(row.user_id, row.problem_id, row.submission_id, row.kind)] = row
    live = {k: r for k, r in newest.items() if r.body.strip()}
    names = names_of(session, (r.created_by for r in live.values()))
    return {k: feedback_out(r, names) for k, r in live.items()}


def write(
    session: Session,
    assignment_id: int,
    target: Target,
    body: str,
    by: int | None,
    now: datetime,
) -> FeedbackOut:
    user_id, problem_id, submission_id, kind = target
    row = FeedbackText(
        assignment_id=assignment_id,
        user_id=user_id,
        problem_id=problem_id,
        submission_id=submission_id,
        kind=kind,
        body=body,
        created_by=by,
        created_at=now,
    )
    session.add(row)
    session.commit()
    return feedback_out(row, names_of(session, [by]))
