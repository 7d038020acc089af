"""What a caller is shown of a submission: the one place the feedback policy cuts a report.
Registered as the submissions API's view (see app.main), so GET, the event stream and the
create response with ``?wait`` all answer through it; the assignment's CSV, pages, the
submission lists and the gradebook read the same cut (``report_cut``, ``work_cut``).

- Course staff (TA, instructor) and admins: the full report of anyone in the course.
- The student who submitted: the report cut to ``policy.feedback_level`` (of the problem's own
  policy, else the assignment's; at this moment; their own due date with extensions; the
  publication date); no score while scores are hidden and unpublished.
- Anyone else: nothing (404, as for an unknown id).

A student's strictest policy follows them: wherever a person is a student under a restricting
policy on a problem, every report on that problem they read, in any role or course (staff of
another course, practice, a deployment instructor's lists), is cut to it as well, since the same
hidden cases grade it everywhere.

Practice outside an assignment is cut too while an assignment that restricts feedback on the
same problem is in progress: its hidden cases (the folder's and instructors' stored ones) are
the practice run's hidden cases as well, so full practice reports would undo the policy, even
signed out. Such practice reports are cut to the strictest level among those assignments, for
everyone but the staff of their courses and the deployment's instructors.

A cut report (``summary``, ``verdict``) carries no time of the run: no ``timings``, no
``started_at`` or ``finished_at``; only ``created_at``, fixed when the submission arrived.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from app.assignments import policy
from app.assignments.models import Assignment, AssignmentProblem, Override, late_of
from app.assignments.service import section_of, student_rules
from app.auth.tokens import Principal
from app.courses.deps import is_course_staff
from app.courses.models import Membership
from app.db.base import utcnow
from app.submissions.models import Submission
from app.submissions.schemas import SubmissionOut
from app.submissions.service import Sessions


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


def stricter(a: Cut | None, b: Cut | None) -> Cut | None:
    """The stricter of two cuts, field by field (None: no cut)."""
    if a is None or b is None:
        return a or b
    level = max(a.level, b.level, key=STRICTNESS.__getitem__)
    return Cut(level, a.scores_hidden or b.scores_hidden)


def _restricting_level(
    session: Session, assignment: Assignment, rule: policy.Feedback, now: datetime
) -> policy.FeedbackLevel:
    """The level an assignment's rule holds for whoever it restricts most (a practice report
    on its problem is cut to it)."""
    if rule == "visible" or published(assignment.feedback_published_at, now):
        return "visible"
    if rule == "after_due_date" and now > _restricts_until(session, assignment):
        return "visible"
    return "verdict" if rule == "hidden" else "summary"


def studied_by(session: Session, principal: Principal | None) -> set[int]:
    """The courses ``principal`` is a student of (not removed): where a policy may follow
    them from. Empty for most staff, which spares a list of many problems ``report_cut``."""
    if principal is None:
        return set()
    return set(
        session.scalars(
            select(Membership.course_id).where(
                Membership.user_id == principal.user_id,
                Membership.role == "student",
                Membership.status != "removed",
            )
        )
    )


def report_cut(
    session: Session,
    problem_id: str,
    principal: Principal | None,
    now: datetime,
    *,
    practice: bool,
    known: dict[int, Cut] | None = None,
) -> Cut | None:
    """How much of a report on ``problem_id`` ``principal`` is shown, beyond the rules of the
    assignment it was made in (None: the full report). Every view of a report asks it.

    - Wherever ``principal`` is a student (not removed) of a course with an assignment on the
      problem, that assignment's cut for them holds on every report on the problem they read,
      in any role and any course: the same hidden cases grade it everywhere, so a staff role
      elsewhere (e.g. an LTI deep link's assignment with ``visible``) must not undo it.
    - A practice report (``practice``) is cut as well to every assignment still restricting
      the problem, except for that course's staff and the deployment's instructors.

    ``known``: ``principal``'s own cuts already read, by assignment id (not read again).
    """
    everyone = practice and not (principal is not None and principal.is_instructor)
    studies = studied_by(session, principal)
    if not studies and not everyone:
        return None
    # Most reports are on problems of no assignment: this read answers it for a fraction of
    # the cost of the queries below (asked on every answer, ?wait included).
    if session.connection().execute(_IN_AN_ASSIGNMENT, {"p_problem": problem_id}).first() is None:
        return None
    found = session.execute(
        select(Assignment, AssignmentProblem.feedback)
        .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
        .where(AssignmentProblem.problem_id == problem_id)
    ).all()
    cut: Cut | None = None
    for assignment, own in found:
        if principal is not None and assignment.course_id in studies:
            mine = (known or {}).get(assignment.id) or student_cut(
                session, assignment, problem_id, principal.user_id, now
            )
            if mine.level != "visible" or mine.scores_hidden:
                cut = stricter(cut, mine)
        if not everyone:
            continue
        rule: policy.Feedback = own or assignment.feedback  # type: ignore[assignment]
        level = _restricting_level(session, assignment, rule, now)
        if level == "visible":
            continue
        if principal is not None and is_course_staff(session, assignment.course_id, principal):
            continue
        cut = stricter(cut, Cut(level, scores_hidden=False))
    return cut


def work_cut(
    session: Session,
    assignment: Assignment,
    problem_id: str,
    principal: Principal,
    now: datetime,
    *,
    staff: bool,
) -> Cut | None:
    """The cut of a report on work in ``assignment`` that ``principal`` reads: for the
    course's ``staff``, only what follows them from where they are a student; for the student
    who made it, also the assignment's own cut for them."""
    if staff:
        return report_cut(session, problem_id, principal, now, practice=False)
    own = student_cut(session, assignment, problem_id, principal.user_id, now)
    followed = report_cut(
        session, problem_id, principal, now, practice=False, known={assignment.id: own}
    )
    return stricter(own, followed)


def cut_report(out: SubmissionOut, cut: Cut) -> SubmissionOut:
    """``out`` as a student under ``cut`` sees it."""
    score = None if cut.scores_hidden else out.score
    common: dict[str, object] = {
        "score": score,
        "score_hidden": cut.scores_hidden,
        "view": cut.level,
    }
    if cut.level == "visible":
        return out.model_copy(update=common)
    # A cut report gives the run no time: when it finished tells how long its hidden cases
    # took (the submission's to choose), and when it started tells when the client's previous
    # run finished (a client's runs never overlap). The arrival (``created_at``) stays.
    common |= {"started_at": None, "finished_at": None}
    if out.status != "done":
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
    sessions: Sessions,
    row: Submission,
    out: SubmissionOut,
    principal: Principal | None,
) -> SubmissionOut | None:
    """The submissions API's view (see ``SubmissionView``): who may read practice is decided
    before (``may_read``), who may read an assignment's work here; how much of either anyone
    is shown, here too (``report_cut``)."""
    now = utcnow()
    if row.assignment_id is None:
        with sessions() as session:
            cut = report_cut(session, row.problem_id, principal, now, practice=True)
        return out if cut is None else cut_report(out, cut)
    if principal is None:
        return None
    with sessions() as session:
        assignment = session.get(Assignment, row.assignment_id)
        if assignment is None:
            return None
        staff = is_course_staff(session, assignment.course_id, principal)
        if not staff and row.user_id != principal.user_id:
            return None
        cut = work_cut(session, assignment, row.problem_id, principal, now, staff=staff)
    return out if cut is None else cut_report(out, cut)
