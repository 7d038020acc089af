"""A student's own submissions in an assignment as CSV, cut by the feedback policy like every
other surface: the verdict always, the score only while scores are shown, and as feedback the
count of cases passed and the diagnoses' titles the student's view holds (under ``summary`` the
public ones and "k of n hidden cases passed"; under ``verdict`` nothing)."""

from __future__ import annotations

import csv
import io
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.assignments.feedback import Cut, cut_report, work_cut
from app.assignments.models import Assignment
from app.auth.tokens import Principal
from app.submissions.models import Submission
from app.submissions.schemas import SubmissionOut, submission_out

COLUMNS = ("submitted_at", "problem_id", "mode", "graded_attempt", "status", "verdict", "score",
           "feedback")  # fmt: skip


def feedback_text(out: SubmissionOut) -> str:
    if out.status != "done" or out.view == "verdict":
        return ""
    public = [t for t in out.tests if t.visibility == "public"]
    parts = [f"{sum(t.status == 'passed' for t in public)} of {len(public)} public cases passed"]
    if out.view == "summary":
        parts.append(f"{out.hidden_passed} of {out.hidden_total} hidden cases passed")
    else:
        hidden = [t for t in out.tests if t.visibility != "public"]
        if hidden:
            passed = sum(t.status == "passed" for t in hidden)
            parts.append(f"{passed} of {len(hidden)} hidden cases passed")
    parts += [d.title for d in out.diagnoses]
    return "; ".join(parts)


def csv_of(
    session: Session, assignment: Assignment, principal: Principal, now: datetime, *, staff: bool
) -> str:
    """``principal``'s own submissions; ``staff``: they are the course's staff, who see their
    own reports in full unless a policy follows them from where they are a student."""
    rows = session.scalars(
        select(Submission)
        .where(Submission.assignment_id == assignment.id, Submission.user_id == principal.user_id)
        .order_by(Submission.created_at, Submission.id)
    )
    cuts: dict[str, Cut | None] = {}
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for row in rows:
        out = submission_out(row)
        if row.problem_id not in cuts:
            cuts[row.problem_id] = work_cut(
                session, assignment, row.problem_id, principal, now, staff=staff
            )
        cut = cuts[row.problem_id]
        if cut is not None:
            out = cut_report(out, cut)
        writer.writerow(
            (
                (row.received_at or row.created_at).isoformat(),
                row.problem_id,
                row.mode,
                row.graded_attempt or "",
                row.status,
                out.verdict.value if out.verdict is not None else "",
                "" if out.score is None else f"{out.score:g}",
                feedback_text(out),
            )
        )
    return buffer.getvalue()
