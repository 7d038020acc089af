"""The one place scores are computed from the database.

A score is never stored: it is computed when read from the graded attempts (done rows with a
``graded_attempt``), the student's dates and grants (their overrides and their section's), the
assignment's policy (``app.assignments.policy``) and the newest manual adjustment. So a regrade,
a new override or a changed penalty shows in every view at once.

Whatever the number of students, one read fetches every graded attempt of the assignment
(a handful of columns, no code, no report), and one more the reports of just the latest graded
attempt of each (student, problem), for their diagnoses.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.assignments.models import (
    Assignment,
    AssignmentProblem,
    Override,
    late_of,
    penalties_of,
)
from app.assignments.policy import (
    AfterClose,
    Attempt,
    Dates,
    Grant,
    Scoring,
    attempt_value,
    attempts_allowed,
    problem_score,
    student_dates,
)
from app.auth.models import User
from app.courses.models import Membership
from app.gradebook.models import GradeAdjustment
from app.submissions.models import Submission

ACCEPTED = "accepted"
# Wrong graded attempts in a row (and none accepted) that make a student stuck.
STUCK_AFTER = 2
DONE = "done"


@dataclass(frozen=True)
class Student:
    user_id: int
    name: str
    email: str
    section: str | None
    status: str  # active | blocked | removed: a removed student's history stays


@dataclass(frozen=True)
class ProblemInfo:
    problem_id: str
    title: str
    points: float
    position: int


@dataclass(frozen=True)
class AttemptRow:
    """One graded attempt as the gradebook reads it (no code, no report)."""

    submission_id: str
    user_id: int
    problem_id: str
    number: int
    status: str
    verdict: str | None
    score: float | None
    received_at: datetime  # when its request arrived: what the dates judge
    finished_at: datetime | None


@dataclass(frozen=True)
class AttemptCredit:
    """What one graded attempt is worth under the student's dates and the penalties."""

    fraction: float  # grader score x credit x attempt factor
    points: float
    rule: str


@dataclass(frozen=True)
class Adjustment:
    id: int
    user_id: int
    problem_id: str
    old_score: float | None
    score: float | None
    comment: str
    created_by: int | None
    created_at: datetime


@dataclass
class Cell:
    """One student's score on one problem and what decided it."""

    problem_id: str
    max_points: float
    points: float  # in force: the adjustment's when there is one, else the computed one
    computed_points: float
    rule: str
    decided_by: int | None  # the attempt that decided the computed score
    adjusted: bool
    attempts_used: int  # graded attempts taken, including those still being graded
    attempts_allowed: int | None  # None: no maximum
    pending: int  # graded attempts not finished yet
    last_verdict: str | None
    last_submission_id: str | None
    last_at: datetime | None
    diagnoses: list[tuple[str, str]] = field(default_factory=list)  # (code, title), latest
    ever_accepted: bool = False  # some graded attempt was accepted
    wrong_streak: int = 0  # graded attempts not accepted since the last accepted one (or ever)

    @property
    def stuck(self) -> bool:
        """Never accepted, and the last two or more graded attempts wrong: a student with full
        marks whose latest attempt failed is not stuck, nor one who tried once."""
        return not self.ever_accepted and self.wrong_streak >= STUCK_AFTER


@dataclass
class StudentGrades:
    student: Student
    dates: Dates
    cells: list[Cell]

    @property
    def total(self) -> float:
        return sum(c.points for c in self.cells)


@dataclass
class Gradebook:
    assignment: Assignment
    problems: list[ProblemInfo]
    rows: list[StudentGrades]
    attempts: list[AttemptRow]  # every graded attempt of these students, as read

    @property
    def max_total(self) -> float:
        return sum(p.points for p in self.problems)


def scores_visible(assignment: Assignment, now: datetime) -> bool:
    """Whether students see their points now (staff always do)."""
    if not assignment.hide_scores:
        return True
    published = assignment.scores_published_at
    return published is not None and now >= published


def load_problems(
    session: Session, assignment_id: int, titles: dict[str, str]
) -> list[ProblemInfo]:
    rows = session.scalars(
        select(AssignmentProblem)
        .where(AssignmentProblem.assignment_id == assignment_id)
        .order_by(AssignmentProblem.position, AssignmentProblem.id)
    ).all()
    return [
        ProblemInfo(r.problem_id, titles.get(r.problem_id, r.problem_id), r.points, r.position)
        for r in rows
    ]


def load_students(
    session: Session,
    course_id: int,
    *,
    section: str | None = None,
    user_ids: Iterable[int] | None = None,
) -> list[Student]:
    """The course's students (blocked and removed ones too: their work stays graded), by
    name."""
    stmt = (
        select(User.id, User.name, User.email, Membership.section, Membership.status)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.course_id == course_id, Membership.role == "student")
        .order_by(User.name, User.id)
    )
    if section is not None:
        stmt = stmt.where(Membership.section == section)
    if user_ids is not None:
        stmt = stmt.where(User.id.in_(list(user_ids)))
    return [
        Student(user_id, name, email or "", section, status)
        for user_id, name, email, section, status in session.execute(stmt)
    ]


def load_attempts(
    session: Session,
    assignment_id: int,
    user_id: int | None = None,
    problem_ids: Collection[str] | None = None,
) -> list[AttemptRow]:
    """Every graded attempt of the assignment (of one student with ``user_id``; on
    ``problem_ids``): one query."""
    s = Submission
    stmt = select(
        s.id, s.user_id, s.problem_id, s.graded_attempt, s.status, s.verdict, s.score,
        func.coalesce(s.received_at, s.created_at), s.finished_at,
    ).where(s.assignment_id == assignment_id, s.graded_attempt.is_not(None))  # fmt: skip
    if user_id is not None:
        stmt = stmt.where(s.user_id == user_id)
    if problem_ids is not None:
        stmt = stmt.where(s.problem_id.in_(list(problem_ids)))
    return [
        AttemptRow(sid, uid, pid, number, status, verdict, score, created, finished)
        for sid, uid, pid, number, status, verdict, score, created, finished in session.execute(
            stmt
        )
        if uid is not None and number is not None
    ]


def load_adjustments(
    session: Session, assignment_id: int, user_id: int | None = None
) -> list[Adjustment]:
    """The audit log, oldest first."""
    g = GradeAdjustment
    stmt = select(
        g.id, g.user_id, g.problem_id, g.old_score, g.score, g.comment, g.created_by, g.created_at
    ).where(g.assignment_id == assignment_id)
    if user_id is not None:
        stmt = stmt.where(g.user_id == user_id)
    return [Adjustment(*row) for row in session.execute(stmt.order_by(g.id))]


def load_grants(session: Session, assignment_id: int) -> list[Override]:
    return list(session.scalars(select(Override).where(Override.assignment_id == assignment_id)))


def grants_of(overrides: Sequence[Override], student: Student) -> list[Grant]:
    """The overrides that apply to a student: their own and their section's."""
    return [
        Grant(until=o.until, credit=o.credit, extra_attempts=o.extra_attempts)
        for o in overrides
        if o.user_id == student.user_id
        or (o.section is not None and student.section is not None and o.section == student.section)
    ]


def load_latest_diagnoses(
    session: Session, submission_ids: Sequence[str]
) -> dict[str, list[tuple[str, str]]]:
    """(code, title) of each report's diagnoses, for these submissions only."""
    out: dict[str, list[tuple[str, str]]] = {}
    chunk = 500  # under every database's limit on bound parameters
    for start in range(0, len(submission_ids), chunk):
        ids = submission_ids[start : start + chunk]
        stmt = select(Submission.id, Submission.report).where(Submission.id.in_(ids))
        for sid, report in session.execute(stmt):
            out[sid] = report_diagnoses(report)
    return out


_DECODER = json.JSONDecoder()
_DIAGNOSES_KEY = '"diagnoses":'


def report_diagnoses(report: str | None) -> list[tuple[str, str]]:
    """The diagnoses of a stored report, decoding just their list: parsing 1500 whole reports
    (each case's error grid...) took most of a 300-student gradebook's time, and having the
    database extract them took as long on PostgreSQL. In the JSON text the key can only be the
    report's own: inside a string every quote is escaped, and no nested object has the key."""
    if not report:
        return []
    at = report.find(_DIAGNOSES_KEY)
    items: list[dict[str, Any]]
    if at < 0:
        items = json.loads(report).get("diagnoses", [])
    else:
        at += len(_DIAGNOSES_KEY)
        while report[at] in " \t\r\n":
            at += 1
        items, _ = _DECODER.raw_decode(report, at)
    return [(str(d.get("code", "")), str(d.get("title", ""))) for d in items]


class ScoreContext:
    """An assignment's policy, read once, applied to any number of students."""

    def __init__(self, assignment: Assignment, overrides: Sequence[Override]) -> None:
        self.assignment = assignment
        self.overrides = overrides
        self.late = late_of(assignment)
        self.penalties = penalties_of(assignment)
        self.scoring: Scoring = assignment.scoring  # type: ignore[assignment]
        self.after_close: AfterClose = assignment.after_close  # type: ignore[assignment]

    def dates(self, student: Student) -> tuple[Dates, list[Grant]]:
        grants = grants_of(self.overrides, student)
        dates = student_dates(
            self.assignment.release_at, self.assignment.due_at, self.late, self.after_close, grants
        )
        return dates, grants

    def credit(self, attempt: AttemptRow, dates: Dates, points: float) -> AttemptCredit | None:
        """What one attempt is worth; None while it is being graded."""
        if attempt.status != DONE or attempt.score is None:
            return None
        value, rule = attempt_value(
            Attempt(attempt.number, attempt.received_at, attempt.score), dates, self.penalties
        )
        return AttemptCredit(value, round(value * points, 6), rule)

    def cell(
        self,
        problem: ProblemInfo,
        dates: Dates,
        grants: Sequence[Grant],
        attempts: Sequence[AttemptRow],
        adjustment: Adjustment | None,
    ) -> Cell:
        done = [a for a in attempts if a.status == DONE and a.score is not None]
        scored = problem_score(
            [Attempt(a.number, a.received_at, a.score or 0.0) for a in done],
            dates,
            self.penalties,
            self.scoring,
        )
        computed = round(scored.fraction * problem.points, 6)
        latest = max(done, key=lambda a: a.number, default=None)
        streak = 0
        for a in sorted(done, key=lambda a: a.number, reverse=True):
            if a.verdict == ACCEPTED:
                break
            streak += 1
        points, rule, adjusted = computed, scored.rule, False
        if adjustment is not None and adjustment.score is not None:
            points, rule, adjusted = adjustment.score, f"adjusted: {adjustment.comment}", True
        return Cell(
            problem_id=problem.problem_id,
            max_points=problem.points,
            points=points,
            computed_points=computed,
            rule=rule,
            decided_by=scored.attempt,
            adjusted=adjusted,
            attempts_used=len(attempts),
            attempts_allowed=attempts_allowed(self.assignment.max_attempts, grants),
            pending=len(attempts) - len(done),
            last_verdict=latest.verdict if latest else None,
            last_submission_id=latest.submission_id if latest else None,
            last_at=latest.received_at if latest else None,
            ever_accepted=any(a.verdict == ACCEPTED for a in done),
            wrong_streak=streak,
        )


def newest_adjustments(
    adjustments: Sequence[Adjustment],
) -> dict[tuple[int, str], Adjustment]:
    newest: dict[tuple[int, str], Adjustment] = {}
    for adj in adjustments:  # oldest first: the last one written wins
        newest[(adj.user_id, adj.problem_id)] = adj
    return newest


def compute(
    session: Session,
    assignment: Assignment,
    titles: dict[str, str],
    *,
    section: str | None = None,
    user_id: int | None = None,
    problem_ids: Collection[str] | None = None,
    diagnoses: bool = False,
) -> Gradebook:
    """The gradebook of an assignment: every student of its course (of ``section``, or just
    ``user_id``) × every problem (of ``problem_ids``). ``diagnoses``: also read each cell's
    latest diagnoses."""
    problems = load_problems(session, assignment.id, titles)
    if problem_ids is not None:
        problems = [p for p in problems if p.problem_id in problem_ids]
    students = load_students(
        session,
        assignment.course_id,
        section=section,
        user_ids=None if user_id is None else [user_id],
    )
    context = ScoreContext(assignment, load_grants(session, assignment.id))
    wanted = {s.user_id for s in students}
    by_cell: dict[tuple[int, str], list[AttemptRow]] = defaultdict(list)
    attempts = [
        a
        for a in load_attempts(session, assignment.id, user_id, problem_ids)
        if a.user_id in wanted
    ]
    for row in attempts:
        by_cell[(row.user_id, row.problem_id)].append(row)
    newest = newest_adjustments(load_adjustments(session, assignment.id, user_id))
    rows: list[StudentGrades] = []
    for student in students:
        dates, grants = context.dates(student)
        cells = [
            context.cell(
                problem,
                dates,
                grants,
                by_cell.get((student.user_id, problem.problem_id), []),
                newest.get((student.user_id, problem.problem_id)),
            )
            for problem in problems
        ]
        rows.append(StudentGrades(student, dates, cells))
    if diagnoses:
        attach_diagnoses(session, rows)
    return Gradebook(assignment, problems, rows, attempts)


def attach_diagnoses(session: Session, rows: Sequence[StudentGrades]) -> None:
    latest = [c.last_submission_id for r in rows for c in r.cells if c.last_submission_id]
    found = load_latest_diagnoses(session, latest)
    for r in rows:
        for c in r.cells:
            if c.last_submission_id:
                c.diagnoses = found.get(c.last_submission_id, [])
