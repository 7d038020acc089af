"""Per-problem statistics over a time window, in SQL that runs on SQLite and PostgreSQL.

Counted: graded submissions (``mode = 'submit'``; "Run examples" is practice) created in
``[since, until)``, by their latest result. A diagnosis code counts once per submission whose
latest report names it; the codes are read from the stored report JSON with ``json_each``
(SQLite) or ``jsonb_array_elements`` (PostgreSQL).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Date, String, case, cast, column, distinct, func, select, true
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from app.submissions.models import Submission


class CodeCount(BaseModel):
    code: str
    count: int


class DayStats(BaseModel):
    date: str  # YYYY-MM-DD, UTC
    submissions: int
    graded: int
    accepted: int
    acceptance_rate: float | None


class ProblemStats(BaseModel):
    problem_id: str
    since: datetime | None
    until: datetime | None
    submissions: int = Field(description="Created in the window (mode 'submit').")
    graded: int = Field(description="Of those, finished grading.")
    accepted: int
    acceptance_rate: float | None = Field(description="accepted / graded; null if none graded.")
    verdicts: dict[str, int]
    diagnoses: list[CodeCount] = Field(
        description="Submissions whose latest result names each diagnosis code, most first."
    )
    over_time: list[DayStats]


class StatsRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def _window(self, problem_id: str, since: datetime | None, until: datetime | None) -> list[Any]:
        conditions: list[Any] = [Submission.problem_id == problem_id, Submission.mode == "submit"]
        if since is not None:
            conditions.append(Submission.created_at >= since)
        if until is not None:
            conditions.append(Submission.created_at < until)
        return conditions

    def totals(
        self, problem_id: str, since: datetime | None, until: datetime | None
    ) -> tuple[int, int, int]:
        stmt = select(
            func.count(),
            func.coalesce(func.sum(case((Submission.status == "done", 1), else_=0)), 0),
            func.coalesce(func.sum(case((Submission.verdict == "accepted", 1), else_=0)), 0),
        ).where(*self._window(problem_id, since, until))
        total, graded, accepted = self.session.execute(stmt).one()
        return int(total), int(graded), int(accepted)

    def verdicts(
        self, problem_id: str, since: datetime | None, until: datetime | None
    ) -> dict[str, int]:
        stmt = (
            select(Submission.verdict, func.count())
            .where(*self._window(problem_id, since, until), Submission.status == "done")
            .group_by(Submission.verdict)
        )
        return {str(v): int(n) for v, n in self.session.execute(stmt) if v is not None}

    def diagnosis_counts(
        self, problem_id: str, since: datetime | None, until: datetime | None
    ) -> list[tuple[str, int]]:
        if self.session.get_bind().dialect.name == "postgresql":
            items = (
                func.jsonb_array_elements(cast(Submission.report, JSONB)["diagnoses"])
                .table_valued(column("value", JSONB))
                .alias("d")
            )
            code: Any = items.c.value.op("->>")("code")
        else:
            items = (
                func.json_each(Submission.report, "$.diagnoses").table_valued("value").alias("d")
            )
            code = func.json_extract(items.c.value, "$.code")
        code = cast(code, String).label("code")
        count = func.count(distinct(Submission.id)).label("n")
        stmt = (
            select(code, count)
            .select_from(Submission)
            .join(items, true())
            .where(
                *self._window(problem_id, since, until),
                Submission.status == "done",
                Submission.report.is_not(None),
            )
            .group_by(code)
            .order_by(count.desc(), code)
        )
        return [(str(c), int(n)) for c, n in self.session.execute(stmt) if c is not None]

    def daily(
        self, problem_id: str, since: datetime | None, until: datetime | None
    ) -> list[tuple[str, int, int, int]]:
        if self.session.get_bind().dialect.name == "postgresql":
            day: Any = cast(func.timezone("UTC", Submission.created_at), Date)
        else:  # stored as UTC text: its first 10 characters are the date
            day = func.date(Submission.created_at)
        day = day.label("day")
        stmt = (
            select(
                day,
                func.count(),
                func.coalesce(func.sum(case((Submission.status == "done", 1), else_=0)), 0),
                func.coalesce(func.sum(case((Submission.verdict == "accepted", 1), else_=0)), 0),
            )
            .where(*self._window(problem_id, since, until))
            .group_by(day)
            .order_by(day)
        )
        out = []
        for d, n, graded, accepted in self.session.execute(stmt):
            text = d.isoformat() if isinstance(d, date) else str(d)
            out.append((text, int(n), int(graded), int(accepted)))
        return out


def _rate(accepted: int, graded: int) -> float | None:
    return accepted / graded if graded else None


def problem_stats(
    session: Session, problem_id: str, since: datetime | None, until: datetime | None
) -> ProblemStats:
    repo = StatsRepository(session)
    total, graded, accepted = repo.totals(problem_id, since, until)
    return ProblemStats(
        problem_id=problem_id,
        since=since,
        until=until,
        submissions=total,
        graded=graded,
        accepted=accepted,
        acceptance_rate=_rate(accepted, graded),
        verdicts=repo.verdicts(problem_id, since, until),
        diagnoses=[
            CodeCount(code=c, count=n) for c, n in repo.diagnosis_counts(problem_id, since, until)
        ],
        over_time=[
            DayStats(date=d, submissions=n, graded=g, accepted=a, acceptance_rate=_rate(a, g))
            for d, n, g, a in repo.daily(problem_id, since, until)
        ],
    )
