"""Finding submissions for instructors: the filters, the query (newest first, keyset-paginated
by an opaque cursor) and each row as the list shows it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field, field_validator
from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session

from app.auth.models import User
from app.core.errors import ApiError
from app.grading.verdicts import Verdict
from app.submissions.models import Submission
from app.submissions.schemas import Mode, Status, SubmissionOut

MAX_PAGE = 200
# What a diagnosis code looks like (lower case, digits, hyphens): no LIKE wildcard can slip in.
CODE_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"


class SubmissionFilters(BaseModel):
    """Which submissions: every given filter applies (AND)."""

    problem: str | None = Field(default=None, max_length=128, description="A problem id.")
    verdict: Verdict | None = None
    diagnosis: str | None = Field(
        default=None,
        pattern=CODE_PATTERN,
        description="A diagnosis code the result carries, e.g. `missing-wo`.",
    )
    since: datetime | None = Field(default=None, description="Created at or after (ISO 8601).")
    until: datetime | None = Field(default=None, description="Created before (ISO 8601).")
    user_id: int | None = Field(default=None, ge=1, le=2**53, description="The submitting account.")
    mode: Mode | None = None
    status: Status | None = None

    @field_validator("since", "until", mode="before")
    @classmethod
    def _iso(cls, value: object) -> object:
        # pydantic would also read a number ("0.5") as seconds since 1970: the API says ISO.
        if isinstance(value, str) and not ISO_DATE_TIME.match(value):
            raise ValueError("expected an ISO 8601 date and time, e.g. 2026-11-01T09:00:00Z")
        return value

    @field_validator("since", "until")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


ISO_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def as_utc(value: datetime) -> datetime:
    """A time without a zone (a form's local field) is read as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class SubmissionRow(BaseModel):
    id: str
    problem_id: str
    mode: Mode
    status: Status
    verdict: Verdict | None = None
    score: float | None = None
    diagnoses: list[str] = Field(description="The result's diagnosis codes.")
    user_id: int | None = Field(description="None: anonymous practice.")
    assignment_id: int | None = Field(default=None, description="None: practice.")
    user_name: str | None = None
    run: int = Field(description="1, then one more per regrade.")
    test_set_version: int | None = None
    received_at: datetime | None = Field(default=None, description="When its request arrived.")
    created_at: datetime
    finished_at: datetime | None = None


class SubmissionPage(BaseModel):
    items: list[SubmissionRow]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next (older) page; null on the last page."
    )


# "<microseconds since 1970>~<id>" of the page's last row: every string of this pattern is a
# place in the list (the document says so, and nothing that matches it is refused).
CURSOR_PATTERN = r"^[0-9]{1,17}~[0-9A-Za-z-]{1,36}$"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def encode_cursor(row: Submission) -> str:
    return f"{(row.created_at - EPOCH) // MICROSECOND}~{row.id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    micros, _, submission_id = cursor.partition("~")
    try:
        return EPOCH + int(micros) * MICROSECOND, submission_id
    except (ValueError, OverflowError):
        raise ApiError(
            422, "invalid_cursor", "the cursor is not one this list handed out", "cursor"
        ) from None


def practice() -> ColumnElement[bool]:
    """Practice: outside every assignment (a course's work is its staff's to list)."""
    return Submission.assignment_id.is_(None)


def submissions_query(
    filters: SubmissionFilters, scope: ColumnElement[bool]
) -> Select[Submission, str]:
    """Submissions in ``scope`` matching ``filters``, newest first, with the submitting
    account's name."""
    columns = Submission.__table__.c
    conditions: list[Any] = [scope]
    if filters.problem is not None:
        conditions.append(columns.problem_id == filters.problem)
    if filters.verdict is not None:
        conditions.append(columns.verdict == filters.verdict.value)
    if filters.diagnosis is not None:
        # The stored report is compact JSON (pydantic's dump) where only a diagnosis has a
        # "code" key; the pattern rules out LIKE's wildcards.
        conditions.append(columns.report.like(f'%"code":"{filters.diagnosis}"%'))
    if filters.since is not None:
        conditions.append(columns.created_at >= filters.since)
    if filters.until is not None:
        conditions.append(columns.created_at < filters.until)
    if filters.user_id is not None:
        conditions.append(columns.user_id == filters.user_id)
    if filters.mode is not None:
        conditions.append(columns.mode == filters.mode)
    if filters.status is not None:
        conditions.append(columns.status == filters.status)
    return (
        select(Submission, User.name)
        .outerjoin(User, User.id == Submission.user_id)
        .where(*conditions)
        .order_by(Submission.created_at.desc(), Submission.id.desc())
    )


def diagnosis_codes(report: str | None) -> list[str]:
    if not report:
        return []
    found = json.loads(report).get("diagnoses") or []
    return [str(d.get("code")) for d in found if isinstance(d, dict)]


def row_out(
    submission: Submission, user_name: str | None, shown: SubmissionOut | None = None
) -> SubmissionRow:
    """``shown``: the report as the reader may see it, when a feedback policy cuts it."""
    row = SubmissionRow(
        id=submission.id,
        problem_id=submission.problem_id,
        mode=submission.mode,
        status=submission.status,
        verdict=submission.verdict,
        score=submission.score,
        diagnoses=diagnosis_codes(submission.report),
        user_id=submission.user_id,
        assignment_id=submission.assignment_id,
        user_name=user_name,
        run=submission.run,
        test_set_version=submission.test_set_version,
        received_at=submission.received_at,
        created_at=submission.created_at,
        finished_at=submission.finished_at,
    )
    if shown is None:
        return row
    return row.model_copy(
        update={
            "score": shown.score,
            "diagnoses": [d.code for d in shown.diagnoses],
            "finished_at": shown.finished_at,
        }
    )


# How a list's reader is shown one submission (``SubmissionService.listed``).
Shown = Callable[[Submission], SubmissionOut]


def _cut_rows(found: Sequence[tuple[Submission, str | None]], shown: Shown) -> list[SubmissionRow]:
    """Each row as ``shown`` cuts it. A list's reader is staff or an instructor, whom only
    a policy following them from where they are a student cuts: the same for every row of one
    problem and assignment, so one uncut row spares the others of its kind the view."""
    uncut: set[tuple[str, int | None]] = set()
    rows = []
    for submission, name in found:
        kind = (submission.problem_id, submission.assignment_id)
        if kind in uncut:
            rows.append(row_out(submission, name))
            continue
        out = shown(submission)
        if out.view == "visible" and not out.score_hidden:
            uncut.add(kind)
            rows.append(row_out(submission, name))
        else:
            rows.append(row_out(submission, name, out))
    return rows


def list_submissions(
    session: Session,
    filters: SubmissionFilters,
    limit: int,
    cursor: str | None,
    scope: ColumnElement[bool],
    shown: Shown | None = None,
) -> SubmissionPage:
    query = submissions_query(filters, scope)
    if cursor:
        created, submission_id = decode_cursor(cursor)
        query = query.where(
            or_(
                Submission.created_at < created,
                and_(Submission.created_at == created, Submission.id < submission_id),
            )
        )
    found = session.execute(query.limit(limit + 1)).all()
    page = [(s, name) for s, name in found[:limit]]
    rows = [row_out(s, name) for s, name in page] if shown is None else _cut_rows(page, shown)
    last = encode_cursor(found[limit - 1][0]) if len(found) > limit else None
    return SubmissionPage(items=rows, next_cursor=last)


def matching_ids(
    session: Session, filters: SubmissionFilters, at_most: int, scope: ColumnElement[bool]
) -> list[str]:
    """The ids of up to ``at_most`` matching submissions in ``scope``, newest first."""
    query = submissions_query(filters, scope).with_only_columns(Submission.id).limit(at_most)
    return list(session.scalars(query))
