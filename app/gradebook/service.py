"""The gradebook's reads and its one write (a manual adjustment), each in its own session.

Access is decided before this module is called (``app.courses.deps``): every method here is
given a course the caller may see and reads only that course's assignment.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.feedback import Cut, cut_report, studied_by, work_cut
from app.assignments.models import Assignment
from app.auth.models import User
from app.auth.tokens import Principal
from app.core.errors import ApiError
from app.courses.models import Membership
from app.db.base import utcnow
from app.gradebook import comments, exports
from app.gradebook.hints import course_hints, hint_out, put_hint
from app.gradebook.insight import class_insight, rush
from app.gradebook.models import GradeAdjustment
from app.gradebook.schemas import (
    AdjustmentIn,
    AdjustmentLog,
    AdjustmentOut,
    AttemptOut,
    DiagnosisRef,
    FeedbackIn,
    FeedbackOut,
    GradebookOut,
    GradebookRow,
    GradeCell,
    HintIn,
    HintList,
    HintOut,
    InsightOut,
    MyGrades,
    MyProblemScore,
    ProblemColumn,
    StatisticsOut,
    StudentDetail,
    StudentRef,
)
from app.gradebook.scores import (
    Adjustment,
    AttemptCredit,
    AttemptRow,
    Cell,
    Gradebook,
    ScoreContext,
    Student,
    StudentGrades,
    compute,
    load_adjustments,
    load_grants,
    load_latest_diagnoses,
    load_problems,
    load_students,
    scores_visible,
)
from app.gradebook.statistics import WEEK, compute_statistics
from app.gradebook.statistics_cache import cache_for, problem_keys
from app.grading.schemas import GradeReport
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
from app.submissions.schemas import submission_out


def assignment_not_found(assignment_id: int) -> ApiError:
    return ApiError(
        404, "assignment_not_found", f"no assignment {assignment_id} here", "assignment_id"
    )


def student_not_found(user_id: int) -> ApiError:
    return ApiError(404, "student_not_found", f"no student {user_id} in this course", "user_id")


Texts = dict[comments.Target, FeedbackOut]
# What a student reads as the rule of a score set by hand: the reason is staff's (audit log).
ADJUSTED_FOR_STUDENT = "adjusted by staff"


def problem_not_in_assignment(problem_id: str) -> ApiError:
    return ApiError(
        404,
        "problem_not_in_assignment",
        f"problem {problem_id!r} is not part of this assignment",
        "problem_id",
    )


def _student_rule(cell: Cell | None) -> str:
    if cell is None:
        return "no graded attempt"
    return ADJUSTED_FOR_STUDENT if cell.adjusted else cell.rule


def cell_out(cell: Cell, user_id: int = 0, texts: Texts | None = None) -> GradeCell:
    first = cell.diagnoses[0] if cell.diagnoses else None
    texts = texts or {}
    return GradeCell(
        problem_id=cell.problem_id,
        points=cell.points,
        max_points=cell.max_points,
        computed_points=cell.computed_points,
        rule=cell.rule,
        decided_by_attempt=cell.decided_by,
        adjusted=cell.adjusted,
        attempts_used=cell.attempts_used,
        attempts_allowed=cell.attempts_allowed,
        pending=cell.pending,
        last_verdict=cell.last_verdict,
        last_submitted_at=cell.last_at,
        diagnosis=None if first is None else DiagnosisRef(code=first[0], title=first[1]),
        comment=texts.get((user_id, cell.problem_id, None, "comment")),
        note=texts.get((user_id, cell.problem_id, None, "note")),
    )


def student_ref(student: Student) -> StudentRef:
    return StudentRef(
        user_id=student.user_id,
        name=student.name,
        email=student.email,
        section=student.section,
        status=student.status,
    )


def row_out(row: StudentGrades, texts: Texts | None = None) -> GradebookRow:
    user_id = row.student.user_id
    return GradebookRow(
        **student_ref(row.student).model_dump(),
        due_at=row.dates.due_at,
        cells=[cell_out(c, user_id, texts) for c in row.cells],
        total=round(row.total, 6),
    )


class GradebookService:
    def __init__(self, sessions: sessionmaker[Session], titles: dict[str, str]) -> None:
        self.sessions = sessions
        self.titles = titles

    # -- lookups -------------------------------------------------------------------------------

    def _assignment(
        self, session: Session, course_id: int, assignment_id: int, *, staff: bool = True
    ) -> Assignment:
        """The course's assignment; hidden from students before its release, as if absent."""
        assignment = session.get(Assignment, assignment_id)
        if assignment is None or assignment.course_id != course_id:
            raise assignment_not_found(assignment_id)
        released = assignment.release_at is None or assignment.release_at <= utcnow()
        if not staff and not released:
            raise assignment_not_found(assignment_id)
        return assignment

    def _book(
        self,
        session: Session,
        course_id: int,
        assignment_id: int,
        *,
        section: str | None = None,
        user_id: int | None = None,
        problem_ids: Collection[str] | None = None,
        diagnoses_for: Principal | None = None,
    ) -> Gradebook:
        """``diagnoses_for``: also each cell's latest diagnoses, as this reader may see them:
        none on a problem whose reports are cut for them (``cut_for``)."""
        assignment = self._assignment(session, course_id, assignment_id)
        book = compute(
            session,
            assignment,
            self.titles,
            section=section,
            user_id=user_id,
            problem_ids=problem_ids,
            diagnoses=diagnoses_for is not None,
        )
        if diagnoses_for is not None:
            problems = [p.problem_id for p in book.problems]
            cuts = cut_for(session, assignment, problems, diagnoses_for)
            for row in book.rows:
                for cell in row.cells:
                    if cuts[cell.problem_id] is not None:
                        cell.diagnoses = []
        return book

    # -- a student's own -----------------------------------------------------------------------

    def my_grades(self, course_id: int, assignment_id: int, principal: Principal) -> MyGrades:
        with self.sessions() as session:
            assignment = self._assignment(session, course_id, assignment_id, staff=False)
            book = compute(
                session, assignment, self.titles, user_id=principal.user_id, diagnoses=True
            )
            visible = scores_visible(assignment, utcnow())
            # Comments only: a note never leaves the database for a student.
            texts = comments.in_force(
                session, assignment_id, user_id=principal.user_id, kinds=("comment",)
            )
            cells = book.rows[0].cells if book.rows else []
            hints = course_hints(session, course_id, [p.problem_id for p in book.problems])
            names = comments.names_of(session, (h.updated_by for h in hints.values()))
            mine: dict[str, list[HintOut]] = {}
            for c in cells:
                if not any(key[0] == c.problem_id for key in hints):
                    continue
                seen = _seen_diagnoses(session, assignment, c, principal)
                mine[c.problem_id] = [
                    hint_out(hints[(c.problem_id, code)], names)
                    for code in seen
                    if (c.problem_id, code) in hints
                ]
        by_problem = {c.problem_id: c for c in cells}
        problems = []
        for p in book.problems:
            cell = by_problem.get(p.problem_id)
            problems.append(
                MyProblemScore(
                    problem_id=p.problem_id,
                    title=p.title,
                    points=cell.points if cell and visible else (0.0 if visible else None),
                    max_points=p.points,
                    rule=_student_rule(cell) if visible else None,
                    attempts_used=cell.attempts_used if cell else 0,
                    attempts_allowed=cell.attempts_allowed if cell else assignment.max_attempts,
                    last_verdict=cell.last_verdict if cell else None,
                    comment=texts.get((principal.user_id, p.problem_id, None, "comment")),
                    hints=mine.get(p.problem_id, []),
                )
            )
        total = sum(c.points for c in cells) if visible else None
        return MyGrades(
            problems=problems,
            submission_comments=[t for (_, _, sid, _), t in texts.items() if sid is not None],
            total=None if total is None else round(total, 6),
            max_total=book.max_total,
            scores_hidden=not visible,
        )

    # -- staff: the table ----------------------------------------------------------------------

    def book(
        self,
        course_id: int,
        assignment_id: int,
        section: str | None,
        *,
        diagnoses_for: Principal | None = None,
    ) -> Gradebook:
        with self.sessions() as session:
            return self._book(
                session, course_id, assignment_id, section=section, diagnoses_for=diagnoses_for
            )

    def sections(self, course_id: int) -> list[str]:
        with self.sessions() as session:
            found = session.scalars(
                select(Membership.section)
                .where(
                    Membership.course_id == course_id,
                    Membership.role == "student",
                    Membership.section.is_not(None),
                )
                .distinct()
            ).all()
        return sorted(s for s in found if s is not None)

    def gradebook(
        self, course_id: int, assignment_id: int, section: str | None, reader: Principal
    ) -> GradebookOut:
        book = self.book(course_id, assignment_id, section, diagnoses_for=reader)
        texts = self.texts(assignment_id)
        return GradebookOut(
            assignment_id=book.assignment.id,
            title=book.assignment.title,
            scoring=book.assignment.scoring,
            problems=[
                ProblemColumn(problem_id=p.problem_id, title=p.title, points=p.points)
                for p in book.problems
            ],
            sections=self.sections(course_id),
            students=[row_out(r, texts) for r in book.rows],
            max_total=book.max_total,
        )

    def texts(self, assignment_id: int) -> Texts:
        with self.sessions() as session:
            return comments.in_force(session, assignment_id)

    def gradebook_csv(self, course_id: int, assignment_id: int, section: str | None) -> str:
        book = self.book(course_id, assignment_id, section)
        return exports.gradebook_csv(book, self.texts(assignment_id))

    def canvas_csv(
        self, course_id: int, assignment_id: int, section: str | None, canvas_id: int | None
    ) -> str:
        return exports.canvas_csv(self.book(course_id, assignment_id, section), canvas_id)

    def attempts_csv(self, course_id: int, assignment_id: int, section: str | None) -> str:
        with self.sessions() as session:
            book = self._book(session, course_id, assignment_id, section=section)
            credits = self._credits(session, book, book.attempts)
            texts = comments.in_force(session, assignment_id)
        return exports.attempts_csv(book, credits, texts)

    def _credits(
        self, session: Session, book: Gradebook, attempts: Sequence[AttemptRow]
    ) -> list[tuple[AttemptRow, AttemptCredit | None]]:
        """Each attempt of the book's students, in order, with what the policy made of it."""
        context = ScoreContext(book.assignment, load_grants(session, book.assignment.id))
        rows = {r.student.user_id: r for r in book.rows}
        points = {p.problem_id: p.points for p in book.problems}
        out: list[tuple[AttemptRow, AttemptCredit | None]] = []
        order = sorted(attempts, key=lambda a: (a.user_id, a.problem_id, a.number))
        for attempt in order:
            row = rows.get(attempt.user_id)
            if row is None or attempt.problem_id not in points:
                continue
            out.append((attempt, context.credit(attempt, row.dates, points[attempt.problem_id])))
        out.sort(
            key=lambda pair: (
                rows[pair[0].user_id].student.name,
                pair[0].user_id,
                pair[0].problem_id,
                pair[0].number,
            )
        )
        return out

    # -- staff: one student --------------------------------------------------------------------

    def student(
        self, course_id: int, assignment_id: int, user_id: int, reader: Principal
    ) -> StudentDetail:
        """``reader``: the staff member asking, whose reports are cut where a policy follows
        them from a course they are a student of (``feedback.work_cut``)."""
        with self.sessions() as session:
            book = self._book(
                session, course_id, assignment_id, user_id=user_id, diagnoses_for=reader
            )
            if not book.rows:
                raise student_not_found(user_id)
            row = book.rows[0]
            credit = {a.submission_id: c for a, c in self._credits(session, book, book.attempts)}
            subs = session.scalars(
                select(Submission)
                .where(Submission.assignment_id == assignment_id, Submission.user_id == user_id)
                .order_by(Submission.created_at, Submission.id)
            ).all()
            cuts = cut_for(session, book.assignment, [s.problem_id for s in subs], reader)
            texts = comments.in_force(session, assignment_id, user_id=user_id)
            submissions = [
                _attempt_out(s, credit.get(s.id), cuts[s.problem_id]).model_copy(
                    update={
                        "comment": texts.get((user_id, s.problem_id, s.id, "comment")),
                        "note": texts.get((user_id, s.problem_id, s.id, "note")),
                    }
                )
                for s in subs
            ]
            adjustments = self._adjustments_out(
                session, load_adjustments(session, assignment_id, user_id)
            )
        return StudentDetail(
            student=student_ref(row.student),
            due_at=row.dates.due_at,
            cells=[cell_out(c, user_id, texts) for c in row.cells],
            total=round(row.total, 6),
            max_total=book.max_total,
            submissions=submissions,
            adjustments=adjustments,
        )

    # -- adjustments ---------------------------------------------------------------------------

    def _adjustments_out(
        self, session: Session, adjustments: Sequence[Adjustment]
    ) -> list[AdjustmentOut]:
        ids = {a.user_id for a in adjustments} | {a.created_by for a in adjustments if a.created_by}
        names = dict(session.execute(select(User.id, User.name).where(User.id.in_(ids))).all())
        return [
            AdjustmentOut(
                id=a.id,
                user_id=a.user_id,
                student_name=names.get(a.user_id),
                problem_id=a.problem_id,
                old_score=a.old_score,
                score=a.score,
                comment=a.comment,
                created_by=a.created_by,
                created_by_name=names.get(a.created_by) if a.created_by else None,
                created_at=a.created_at,
            )
            for a in adjustments
        ]

    def adjustments(
        self, course_id: int, assignment_id: int, user_id: int | None = None
    ) -> AdjustmentLog:
        with self.sessions() as session:
            self._assignment(session, course_id, assignment_id)
            found = load_adjustments(session, assignment_id, user_id)
            return AdjustmentLog(adjustments=self._adjustments_out(session, found))

    def adjust(
        self, course_id: int, assignment_id: int, body: AdjustmentIn, by: Principal
    ) -> AdjustmentOut:
        """Append a manual score (or its clearing) to the audit log, with the score it replaces."""
        comment = body.comment.strip()
        with self.sessions() as session:
            book = self._book(session, course_id, assignment_id, user_id=body.user_id)
            if not book.rows:
                raise student_not_found(body.user_id)
            cell = next((c for c in book.rows[0].cells if c.problem_id == body.problem_id), None)
            if cell is None:
                raise problem_not_in_assignment(body.problem_id)
            # Over the problem's points: a conflict with the assignment (409), since the schema
            # cannot say each problem's maximum.
            if body.score is not None and body.score > cell.max_points:
                raise ApiError(
                    409,
                    "score_out_of_range",
                    f"the score must be between 0 and {cell.max_points:g}",
                    "score",
                )
            if body.score is None and not cell.adjusted:
                raise ApiError(
                    409, "nothing_to_clear", "this score has no adjustment to clear", "score"
                )
            row = GradeAdjustment(
                assignment_id=assignment_id,
                user_id=body.user_id,
                problem_id=body.problem_id,
                old_score=cell.points,
                score=body.score,
                comment=comment,
                created_by=by.user_id,
                created_at=utcnow(),
            )
            session.add(row)
            session.commit()
            adjustment = Adjustment(
                row.id,
                row.user_id,
                row.problem_id,
                row.old_score,
                row.score,
                row.comment,
                row.created_by,
                row.created_at,
            )
            return self._adjustments_out(session, [adjustment])[0]

    # -- comments, notes and hints -------------------------------------------------------------

    def write_feedback(
        self, course_id: int, assignment_id: int, body: FeedbackIn, by: Principal
    ) -> FeedbackOut:
        """Replace (or clear) a student's comment or note on a problem or a submission."""
        with self.sessions() as session:
            book = self._book(session, course_id, assignment_id, user_id=body.user_id)
            if not book.rows:
                raise student_not_found(body.user_id)
            if body.problem_id not in {p.problem_id for p in book.problems}:
                raise problem_not_in_assignment(body.problem_id)
            if body.submission_id is not None:
                sub = session.get(Submission, body.submission_id)
                if (
                    sub is None
                    or sub.assignment_id != assignment_id
                    or sub.user_id != body.user_id
                    or sub.problem_id != body.problem_id
                ):
                    raise ApiError(
                        404,
                        "submission_not_found",
                        "no such submission of this student's problem here",
                        "submission_id",
                    )
            target = (body.user_id, body.problem_id, body.submission_id, body.kind)
            return comments.write(
                session, assignment_id, target, body.body.strip(), by.user_id, utcnow()
            )

    def hints(
        self, course_id: int, assignment_id: int, reader: Principal, reach_too: bool
    ) -> HintList:
        """The course's hints on the assignment's problems; ``reach_too``: with how many of its
        students each reaches now (the whole gradebook is read for it)."""
        with self.sessions() as session:
            assignment = self._assignment(session, course_id, assignment_id)
            problems = [p.problem_id for p in load_problems(session, assignment.id, self.titles)]
            found = course_hints(session, course_id, problems)
            names = comments.names_of(session, (h.updated_by for h in found.values()))
            if not reach_too:
                return HintList(hints=[hint_out(h, names) for _, h in sorted(found.items())])
        book = self.book(course_id, assignment_id, None, diagnoses_for=reader)
        reach: dict[tuple[str, str], int] = {}
        for row in book.rows:
            for cell in row.cells:
                for code in {code for code, _ in cell.diagnoses}:
                    key = (cell.problem_id, code)
                    reach[key] = reach.get(key, 0) + 1
        with self.sessions() as session:
            found = course_hints(session, course_id, [p.problem_id for p in book.problems])
            names = comments.names_of(session, (h.updated_by for h in found.values()))
            return HintList(
                hints=[hint_out(h, names, reach.get(k, 0)) for k, h in sorted(found.items())]
            )

    def put_hint(self, course_id: int, assignment_id: int, body: HintIn, by: Principal) -> HintOut:
        with self.sessions() as session:
            assignment = self._assignment(session, course_id, assignment_id)
            problems = load_problems(session, assignment.id, self.titles)
            if body.problem_id not in {p.problem_id for p in problems}:
                raise problem_not_in_assignment(body.problem_id)
            row = put_hint(
                session, course_id, body.problem_id, body.code, body.body.strip(), by.user_id,
                utcnow(),
            )  # fmt: skip
            return hint_out(row, comments.names_of(session, [row.updated_by]))

    # -- statistics ----------------------------------------------------------------------------

    def statistics(
        self, course_id: int, assignment_id: int, section: str | None, reader: Principal
    ) -> StatisticsOut:
        """``reader``: as in ``student`` (no cases, requirements or diagnoses on a problem
        whose reports are cut for them). A problem whose inputs are unchanged since it was
        last computed is answered from ``statistics_cache``."""
        now = utcnow()
        cache = cache_for(self.sessions)
        with self.sessions() as session:
            assignment = self._assignment(session, course_id, assignment_id)
            problems = load_problems(session, assignment.id, self.titles)
            ids = [p.problem_id for p in problems]
            cut = {pid for pid, c in cut_for(session, assignment, ids, reader).items() if c}
            keys = problem_keys(
                session,
                assignment,
                problems,
                load_students(session, assignment.course_id, section=section),
                load_grants(session, assignment.id),
                cut,
                now,
            )
            found = {pid: cache.get((assignment_id, section, pid), keys[pid]) for pid in ids}
            missing = {pid for pid, value in found.items() if value is None}
            if missing:
                computed = self._statistics(session, assignment, section, reader, cut, now, missing)
                for value in computed.problems:
                    slot = (assignment_id, section, value.problem_id)
                    cache.put(slot, keys[value.problem_id], value)
                    found[value.problem_id] = value
        return StatisticsOut(
            assignment_id=assignment_id,
            generated_at=now,
            problems=[value for value in found.values() if value is not None],
        )

    def _statistics(
        self,
        session: Session,
        assignment: Assignment,
        section: str | None,
        reader: Principal,
        cut: set[str],
        now: datetime,
        only: set[str],
    ) -> StatisticsOut:
        book = self._book(
            session,
            assignment.course_id,
            assignment.id,
            section=section,
            problem_ids=only,
            diagnoses_for=reader,
        )
        latest = [c.last_submission_id for r in book.rows for c in r.cells if c.last_submission_id]
        reports: dict[str, GradeReport] = {}
        for start in range(0, len(latest), 500):
            chunk = latest[start : start + 500]
            rows = session.execute(
                select(Submission.id, Submission.report).where(Submission.id.in_(chunk))
            )
            for sid, text in rows:
                if text:
                    reports[sid] = GradeReport.model_validate_json(text)
        recent = [a.submission_id for a in book.attempts if a.received_at >= now - 2 * WEEK]
        diagnoses = load_latest_diagnoses(session, recent)
        return compute_statistics(book, reports, diagnoses, cut, now)

    # -- insight -------------------------------------------------------------------------------

    def insight(
        self, course_id: int, assignment_id: int, section: str | None, reader: Principal
    ) -> InsightOut:
        """``reader``: as in ``student`` (no diagnoses counted on a problem cut for them)."""
        book = self.book(course_id, assignment_id, section, diagnoses_for=reader)
        with self.sessions() as session:
            queued, _, _ = SubmissionRepository(session).queue_stats()
        return class_insight(book).model_copy(update={"rush": rush(book, queued)})

    # -- regrade -------------------------------------------------------------------------------

    def graded_submissions(self, course_id: int, assignment_id: int) -> list[str]:
        """The ids of the assignment's graded attempts, oldest first (the order regrades are
        taken in)."""
        with self.sessions() as session:
            self._assignment(session, course_id, assignment_id)
            return list(
                session.scalars(
                    select(Submission.id)
                    .where(
                        Submission.assignment_id == assignment_id,
                        Submission.graded_attempt.is_not(None),
                    )
                    .order_by(Submission.created_at, Submission.id)
                )
            )


def _seen_diagnoses(
    session: Session, assignment: Assignment, cell: Cell, student: Principal
) -> list[str]:
    """The codes of the latest graded attempt's diagnoses as the student may see them: a hint
    names its diagnosis, so it must not tell what their report's cut hides (under "summary"
    only the diagnoses drawn from the public cases and probes; under "verdict" none)."""
    if cell.last_submission_id is None or not cell.diagnoses:
        return []
    cut = work_cut(session, assignment, cell.problem_id, student, utcnow(), staff=False)
    if cut is None or cut.level == "visible":
        return [code for code, _ in cell.diagnoses]
    if cut.level == "verdict":
        return []
    text = session.scalar(select(Submission.report).where(Submission.id == cell.last_submission_id))
    report = GradeReport.model_validate_json(text) if text else None
    if report is None or report.public_view is None:
        return []
    return [d.code for d in report.public_view.diagnoses]


def cut_for(
    session: Session, assignment: Assignment, problem_ids: Sequence[str], reader: Principal
) -> dict[str, Cut | None]:
    """The cut of the reports on each problem that the course's staff member ``reader`` reads
    (``feedback.work_cut``); a cut that only hides scores is none here: the gradebook shows
    every score anyway."""
    if not studied_by(session, reader):
        return dict.fromkeys(problem_ids)
    now = utcnow()
    cuts: dict[str, Cut | None] = {}
    for problem_id in problem_ids:
        if problem_id not in cuts:
            cut = work_cut(session, assignment, problem_id, reader, now, staff=True)
            if cut is not None and cut.level != "visible":
                cut = Cut(cut.level, scores_hidden=False)
            else:
                cut = None
            cuts[problem_id] = cut
    return cuts


def _attempt_out(row: Submission, credit: AttemptCredit | None, cut: Cut | None) -> AttemptOut:
    report = GradeReport.model_validate_json(row.report) if row.report else None
    started_at, finished_at = row.started_at, row.finished_at
    hidden_passed = hidden_total = None
    if cut is not None:
        shown = cut_report(submission_out(row, report), cut)
        started_at, finished_at = shown.started_at, shown.finished_at
        hidden_passed, hidden_total = shown.hidden_passed, shown.hidden_total
        if report is not None:
            kept = shown.model_dump(include=set(GradeReport.model_fields) - {"public_view"})
            report = GradeReport.model_validate(kept)
    return AttemptOut(
        id=row.id,
        problem_id=row.problem_id,
        mode=row.mode,
        attempt=row.graded_attempt,
        status=row.status,
        verdict=row.verdict,
        score=row.score,
        credit_points=None if credit is None else credit.points,
        credit_rule=None if credit is None else credit.rule,
        code=row.code,
        report=report,
        received_at=row.received_at,
        created_at=row.created_at,
        started_at=started_at,
        finished_at=finished_at,
        view="visible" if cut is None else cut.level,
        hidden_passed=hidden_passed,
        hidden_total=hidden_total,
    )
