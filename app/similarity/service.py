"""Similarity reports for a course's staff: queue one (the runner computes it in the
background), read it, open one pair side by side.

Access is decided before this module is called (``app.courses.deps``: the course's staff);
everything here reads only the given course's assignment. What a report says about hidden
cases (which ones two students fail, and their diagnoses) is left out for a reader whose own
feedback policy on the problem is cut (``app.gradebook.service.cut_for``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment, AssignmentProblem
from app.auth.models import User
from app.auth.tokens import Principal
from app.core.errors import ApiError
from app.courses.models import Membership
from app.gradebook.service import assignment_not_found, cut_for
from app.grading.schemas import GradeReport
from app.similarity import repository
from app.similarity.analysis import Entry, rank
from app.similarity.models import SimilarityReport
from app.similarity.schemas import PairDetail, PairOut, ReportOut
from app.submissions.models import Submission

PAIRS = TypeAdapter(list[PairOut])


def problem_not_found(problem_id: str) -> ApiError:
    return ApiError(
        404, "problem_not_found", f"no problem {problem_id!r} in this assignment", "problem_id"
    )


def entries(session: Session, assignment: Assignment, problem_id: str) -> list[Entry]:
    """Each student's latest graded attempt at the problem that has finished grading."""
    students = select(Membership.user_id).where(
        Membership.course_id == assignment.course_id, Membership.role == "student"
    )
    rows = session.execute(
        select(Submission, User.name)
        .join(User, User.id == Submission.user_id)
        .where(
            Submission.assignment_id == assignment.id,
            Submission.problem_id == problem_id,
            Submission.graded_attempt.is_not(None),
            Submission.status == "done",
            Submission.user_id.in_(students),
        )
        .order_by(Submission.user_id, Submission.graded_attempt)
    ).all()
    latest: dict[int, tuple[Submission, str]] = {}
    for row, name in rows:
        assert row.user_id is not None
        latest[row.user_id] = (row, name)
    return [_entry(row, name) for row, name in latest.values()]


def _entry(row: Submission, name: str) -> Entry:
    assert row.user_id is not None
    diagnoses: tuple[str, ...] = ()
    failures: tuple[tuple[int, str, str], ...] = ()
    if row.report:
        report = GradeReport.model_validate_json(row.report)
        diagnoses = tuple(sorted({d.code for d in report.diagnoses}))
        failures = tuple(
            (index, case.status, hashlib.sha256(case.message.encode()).hexdigest()[:16])
            for index, case in enumerate(report.tests)
            if case.status != "passed"
        )
    return Entry(row.user_id, name, row.id, row.code, diagnoses, failures)


def compute(session: Session, row: SimilarityReport, starters: Mapping[str, str]) -> None:
    """Compute a claimed report and store it (the runner's one step)."""
    assignment = session.get(Assignment, row.assignment_id)
    if assignment is None:
        repository.finish(session, row, error="the assignment no longer exists")
        return
    found = entries(session, assignment, row.problem_id)
    pairs = rank(found, starters.get(row.problem_id, ""))
    repository.finish(session, row, result=PAIRS.dump_json(pairs).decode(), students=len(found))


class SimilarityService:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def _assignment(
        self, session: Session, course_id: int, assignment_id: int, problem_id: str
    ) -> Assignment:
        assignment = session.get(Assignment, assignment_id)
        if assignment is None or assignment.course_id != course_id:
            raise assignment_not_found(assignment_id)
        listed = session.scalar(
            select(AssignmentProblem.id).where(
                AssignmentProblem.assignment_id == assignment_id,
                AssignmentProblem.problem_id == problem_id,
            )
        )
        if listed is None:
            raise problem_not_found(problem_id)
        return assignment

    def request(
        self, course_id: int, assignment_id: int, problem_id: str, reader: Principal
    ) -> ReportOut:
        with self._sessions() as session:
            self._assignment(session, course_id, assignment_id, problem_id)
            repository.request(session, assignment_id, problem_id, reader.user_id)
            session.commit()
        return self.report(course_id, assignment_id, problem_id, reader)

    def report(
        self, course_id: int, assignment_id: int, problem_id: str, reader: Principal
    ) -> ReportOut:
        with self._sessions() as session:
            assignment = self._assignment(session, course_id, assignment_id, problem_id)
            row = repository.find(session, assignment_id, problem_id)
            if row is None:
                return ReportOut(assignment_id=assignment_id, problem_id=problem_id, status="none")
            pairs = PAIRS.validate_json(row.result) if row.result else []
            if cut_for(session, assignment, [problem_id], reader)[problem_id] is not None:
                pairs = [_code_only(p) for p in pairs]
                pairs = [p for p in pairs if p.evidence]
            return ReportOut(
                assignment_id=assignment_id,
                problem_id=problem_id,
                status=row.status,
                requested_at=row.requested_at,
                finished_at=row.finished_at,
                students=row.students,
                error=row.error,
                pairs=pairs,
            )

    def pair(
        self, course_id: int, assignment_id: int, problem_id: str, rank: int, reader: Principal
    ) -> PairDetail:
        report = self.report(course_id, assignment_id, problem_id, reader)
        if report.status != "done":
            raise ApiError(
                409, "report_not_ready", f"the report is {report.status}, not done", "rank"
            )
        chosen = next((p for p in report.pairs if p.rank == rank), None)
        if chosen is None:
            raise ApiError(404, "pair_not_found", f"no pair ranked {rank} in this report", "rank")
        with self._sessions() as session:
            codes = dict(
                session.execute(
                    select(Submission.id, Submission.code).where(
                        Submission.id.in_([chosen.a, chosen.b]),
                        Submission.assignment_id == assignment_id,
                    )
                ).all()
            )
        if len(codes) != 2:  # a submission deleted since the report was made
            raise ApiError(404, "pair_not_found", "a submission of this pair is gone", "rank")
        return PairDetail(pair=chosen, a_code=codes[chosen.a], b_code=codes[chosen.b])


def _code_only(pair: PairOut) -> PairOut:
    return pair.model_copy(update={"evidence": [e for e in pair.evidence if e.kind == "code"]})
