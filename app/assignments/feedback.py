"""What a caller is shown of an assignment's submission: the one place the feedback policy cuts
a report. Registered as the submissions API's view (see app.main), so GET, the event stream and
the create response with ``?wait`` all answer through it, and the assignment's CSV and pages
read the same cut.

- Course staff (TA, instructor) and admins: the full report of anyone in the course.
- The student who submitted: the report cut to ``policy.feedback_level`` (of the problem's own
  policy, else the assignment's; at this moment; their own due date with extensions; the
  publication date); no score while scores are hidden and unpublished.
- Anyone else: nothing (404, as for an unknown id).

Practice outside an assignment is cut too while an assignment that restricts feedback on the
same problem is in progress: its hidden cases (the folder's and instructors' stored ones) are
the practice run's hidden cases as well, so full practice reports would undo the policy, even
signed out. Such practice reports are cut to the strictest level among those assignments, for
everyone but the staff of their courses and the deployment's instructors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, sessionmaker

from app.assignments import policy
from app.assignments.models import Assignment, AssignmentProblem, Override, late_of
from app.assignments.service import section_of, student_rules
from app.auth.tokens import Principal
from app.courses.deps import is_course_staff
from app.db.base import utcnow
from app.submissions.models import Submission
from app.submissions.schemas import SubmissionOut


@dataclass(frozen=True)
class Cut:
    level: policy.FeedbackLevel
    scores_hidden: bool


def published(at: datetime | None, now: datetime) -> bool:
    return at is not None and now >= at


def student_cut(
    session: Session, assignment: Assignment, problem_id: str, user_id: int, now: datetime
) -> Cut:
    """How much of a report on ``problem_id`` the student ``user_id`` sees at ``now``."""
    own = session.scalar(
        select(AssignmentProblem.feedback).where(
            AssignmentProblem.assignment_id == assignment.id,
            AssignmentProblem.problem_id == problem_id,
        )
    )
    rule: policy.Feedback = own or assignment.feedback  # type: ignore[assignment]
    section = section_of(session, assignment.course_id, user_id)
    rules = student_rules(session, assignment, user_id, section)
    level = policy.feedback_level(rule, now, rules.dates.due_at, assignment.feedback_published_at)
    hidden = assignment.hide_scores and not published(assignment.scores_published_at, now)
    return Cut(level, hidden)


STRICTNESS: dict[policy.FeedbackLevel, int] = {"visible": 0, "summary": 1, "verdict": 2}


def _restricts_until(session: Session, assignment: Assignment) -> datetime:
    """When an after_due_date policy stops restricting anyone: the last deadline any student
    has (later deadlines and overrides included)."""
    ends: list[datetime | None] = [assignment.due_at, *(until for until, _ in late_of(assignment))]
    ends += session.scalars(
        select(Override.until).where(
            Override.assignment_id == assignment.id, Override.until.is_not(None)
        )
    ).all()
    return max(e for e in ends if e is not None)


_IN_AN_ASSIGNMENT = (
    select(AssignmentProblem.assignment_id)
    .where(AssignmentProblem.problem_id == bindparam("p_problem"))
    .limit(1)
)


def practice_cut(
    session: Session, problem_id: str, principal: Principal | None, now: datetime
) -> Cut | None:
    """The cut of a practice report on ``problem_id`` (None: the full report)."""
    if principal is not None and principal.is_instructor:
        return None
    # Most practice is on problems of no assignment: this read answers it for a fraction of the
    # cost of the query below (asked on every practice answer, ?wait included).
    if session.connection().execute(_IN_AN_ASSIGNMENT, {"p_problem": problem_id}).first() is None:
        return None
    found = session.execute(
        select(Assignment, AssignmentProblem.feedback)
        .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
        .where(AssignmentProblem.problem_id == problem_id)
    ).all()
    level: policy.FeedbackLevel = "visible"
    for assignment, own in found:
        rule: policy.Feedback = own or assignment.feedback  # type: ignore[assignment]
        if rule == "visible" or published(assignment.feedback_published_at, now):
            continue
        if rule == "after_due_date" and now > _restricts_until(session, assignment):
            continue
        if principal is not None and is_course_staff(session, assignment.course_id, principal):
            continue
        strict: policy.FeedbackLevel = "verdict" if rule == "hidden" else "summary"
        level = max(level, strict, key=STRICTNESS.__getitem__)
    return None if level == "visible" else Cut(level, scores_hidden=False)


def cut_report(out: SubmissionOut, cut: Cut) -> SubmissionOut:
    """``out`` as a student under ``cut`` sees it."""
    score = None if cut.scores_hidden else out.score
    common = {"score": score, "score_hidden": cut.scores_hidden, "view": cut.level}
    if cut.level == "visible" or out.status != "done":
        return out.model_copy(update=common)
    if cut.level == "verdict":
        return out.model_copy(
            update=common
            | {
                "requirements": [],
                "diagnoses": [],
                "tests": [],
                "alternatives": [],
                "stdout": "",
                "stderr": "",
                "stdout_truncated": False,
                "stderr_truncated": False,
                "error": None,
                "load_failure": None,
                "timings": {},
            }
        )
    public = out.public_view
    hidden = [t for t in out.tests if t.visibility != "public"]
    return out.model_copy(
        update=common
        | {
            "tests": [t for t in out.tests if t.visibility == "public"],
            # Computed by the grader from the public cases and the probes alone.
            "requirements": public.requirements if public else [],
            "diagnoses": public.diagnoses if public else [],
            "alternatives": public.alternatives if public else [],
            "error": public.error if public else None,
            "hidden_passed": public.hidden_passed
            if public
            else sum(t.status == "passed" for t in hidden),
            "hidden_total": public.hidden_total if public else len(hidden),
            # The run's time includes the hidden cases', which the submission controls.
            "timings": {},
        }
    )


def assignment_view(
    sessions: sessionmaker[Session],
    row: Submission,
    out: SubmissionOut,
    principal: Principal | None,
) -> SubmissionOut | None:
    """The submissions API's view (see ``SubmissionView``): only rows of an assignment are
    this package's to decide; the others pass through unchanged."""
    if row.assignment_id is None:
        with sessions() as session:
            cut = practice_cut(session, row.problem_id, principal, utcnow())
        return out if cut is None else cut_report(out, cut)
    if principal is None:
        return None
    with sessions() as session:
        assignment = session.get(Assignment, row.assignment_id)
        if assignment is None:
            return None
        if is_course_staff(session, assignment.course_id, principal):
            return out
        if row.user_id != principal.user_id:
            return None
        now = utcnow()
        return cut_report(out, student_cut(session, assignment, row.problem_id, row.user_id, now))
