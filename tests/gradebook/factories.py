"""Assignments, overrides and graded attempts made directly in the database, so the gradebook
is tested without the assignment routes: each row as the submission route and a worker would
leave it."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment, AssignmentProblem, Override
from app.grading.schemas import Diagnosis, GradeReport
from app.submissions.models import Submission

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
MHA = "multi-head-attention"
SOFTMAX = "softmax-backward"


def report(verdict: str, score: float, codes: Sequence[str] = ()) -> str:
    diagnoses = [
        Diagnosis(
            code=code,
            requirement=None,
            title=f"Title of {code}",
            explanation="",
            hint="",
        )
        for code in codes
    ]
    return GradeReport(
        verdict=verdict,  # type: ignore[arg-type]
        score=score,
        requirements=[],
        diagnoses=diagnoses,
        tests=[],
    ).model_dump_json()


def make_assignment(
    sessions: sessionmaker[Session],
    course_id: int,
    problems: Sequence[tuple[str, float]] = ((MHA, 10.0), (SOFTMAX, 5.0)),
    *,
    late: Sequence[tuple[datetime, float]] = (),
    penalties: Sequence[float] = (),
    **fields: object,
) -> int:
    values: dict[str, object] = {
        "title": "Homework 1",
        "due_at": T0,
        "late_deadlines": json.dumps([{"until": u.isoformat(), "credit": c} for u, c in late]),
        "attempt_penalties": json.dumps(list(penalties)),
    }
    values.update(fields)
    with sessions() as session:
        assignment = Assignment(course_id=course_id, **values)
        session.add(assignment)
        session.flush()
        for position, (problem_id, points) in enumerate(problems):
            session.add(
                AssignmentProblem(
                    assignment_id=assignment.id,
                    problem_id=problem_id,
                    points=points,
                    position=position,
                )
            )
        session.commit()
        return assignment.id


def add_override(
    sessions: sessionmaker[Session],
    assignment_id: int,
    *,
    user_id: int | None = None,
    section: str | None = None,
    until: datetime | None = None,
    credit: float = 1.0,
    extra_attempts: int = 0,
) -> None:
    with sessions() as session:
        session.add(
            Override(
                assignment_id=assignment_id,
                user_id=user_id,
                section=section,
                until=until,
                credit=credit,
                extra_attempts=extra_attempts,
            )
        )
        session.commit()


def attempt_row(
    assignment_id: int,
    user_id: int,
    problem_id: str,
    number: int,
    at: datetime,
    score: float | None,
    verdict: str | None = None,
    codes: Sequence[str] = (),
    *,
    code: str = "def f():\n    return 1\n",
) -> Submission:
    done = score is not None
    verdict = verdict or ("accepted" if score == 1.0 else "wrong_answer")
    return Submission(
        id=str(uuid.uuid4()),
        problem_id=problem_id,
        mode="submit",
        code=code,
        code_sha256=hashlib.sha256(code.encode()).hexdigest(),
        client=f"user:{user_id}",
        user_id=user_id,
        assignment_id=assignment_id,
        graded_attempt=number,
        request_sha256=hashlib.sha256(f"{uuid.uuid4()}".encode()).hexdigest(),
        status="done" if done else "queued",
        attempts=1 if done else 0,
        run=1,
        verdict=verdict if done else None,
        score=score,
        report=report(verdict, score, codes) if done and score is not None else None,
        received_at=at,
        created_at=at,
        started_at=at + timedelta(seconds=1) if done else None,
        finished_at=at + timedelta(seconds=2) if done else None,
    )


def being_graded(row: Submission) -> Submission:
    """``row`` (not done) as a grader on another host holds it: running, its lease an hour
    long, so this app's own workers and sweeper leave it alone (a queued row would be graded)."""
    row.status = "running"
    row.attempts = 1
    row.worker = "grader-on-another-host"
    row.lease_token = str(uuid.uuid4())
    row.lease_expires_at = datetime.now(UTC) + timedelta(hours=1)
    row.started_at = row.created_at
    return row


def add_attempt(
    sessions: sessionmaker[Session],
    assignment_id: int,
    user_id: int,
    problem_id: str,
    number: int,
    at: datetime,
    score: float | None,
    verdict: str | None = None,
    codes: Sequence[str] = (),
    **kwargs: str,
) -> str:
    """A graded attempt: done with ``score`` (0 to 1), or with ``score`` None still being
    graded by another host (a queued row would be graded by the app's own workers meanwhile)."""
    row = attempt_row(
        assignment_id, user_id, problem_id, number, at, score, verdict, codes, **kwargs
    )
    if score is None:
        being_graded(row)
    with sessions() as session:
        session.add(row)
        session.commit()
        return row.id


ALL_PROBLEMS = (
    ("multi-head-attention", 10.0),
    ("causal-attention", 10.0),
    ("masked-attention", 10.0),
    ("grouped-query-attention", 10.0),
    ("softmax-backward", 10.0),
)


def sized_report(verdict: str, score: float, codes: Sequence[str]) -> str:
    """A report the size of a real wrong answer's: requirements, diagnoses with text, a dozen
    cases (public ones with an error grid), output."""
    from app.grading.schemas import CaseReport, RequirementResult

    grid = [[0.01 * (i + j) for j in range(16)] for i in range(16)]
    return GradeReport(
        verdict=verdict,  # type: ignore[arg-type]
        score=score,
        requirements=[
            RequirementResult(id=f"r{i}", title=f"Requirement {i}", status="passed")
            for i in range(6)
        ],
        diagnoses=[
            Diagnosis(
                code=c,
                requirement="r3",
                title=f"Title of {c}",
                explanation="x" * 300,
                hint="y" * 200,
                evidence="z" * 200,
            )
            for c in codes
        ],
        tests=[
            CaseReport(
                name=f"case {i}",
                visibility="public" if i < 4 else "hidden",
                status="failed",
                message="mismatch",
                max_error=0.5,
                error_grid=grid if i < 4 else None,
                expected_shape=[2, 3, 6],
            )
            for i in range(12)
        ],
        stdout="printed\n" * 20,
    ).model_dump_json()


def seed_class(
    sessions: sessionmaker[Session], course_id: int, students: int, attempts: int = 2
) -> tuple[int, list[int]]:
    """A class of ``students`` (sections S0..S9) on a 5-problem assignment, each with
    ``attempts`` graded attempts per problem, wrong then right, with full-size reports."""
    from sqlalchemy import insert

    from app.auth.models import User
    from app.courses.models import Membership

    a = make_assignment(sessions, course_id, ALL_PROBLEMS, penalties=[0, 0.1])
    wrong = sized_report("wrong_answer", 0.5, ["missing-wo", "no-scale"])
    right = sized_report("accepted", 1.0, [])
    with sessions() as session:
        users = [{"email": f"s{i}@class.example", "name": f"Student {i:03d}", "role": "member"}
                 for i in range(students)]  # fmt: skip
        ids = list(session.scalars(insert(User).returning(User.id), users))
        session.execute(insert(Membership), [
            {"course_id": course_id, "user_id": uid, "role": "student", "section": f"S{i % 10}"}
            for i, uid in enumerate(ids)
        ])  # fmt: skip
        rows = []
        for i, uid in enumerate(ids):
            for problem_id, _ in ALL_PROBLEMS:
                for n in range(1, attempts + 1):
                    last = n == attempts and i % 3 != 0
                    at = T0 - timedelta(minutes=60 - n)
                    verdict = "accepted" if last else "wrong_answer"
                    row = attempt_row(a, uid, problem_id, n, at, 1.0 if last else 0.5, verdict)
                    row.report = right if last else wrong
                    rows.append(row)
        session.add_all(rows)
        session.commit()
    return a, ids
