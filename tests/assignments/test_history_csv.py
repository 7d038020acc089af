"""A student's CSV of their own submissions (``me.csv``), every column under every feedback
policy: the same graded attempt (1 of 2 public and 1 of 3 hidden cases passed, a diagnosis from
the full run and another from the public cases alone) and one still being graded, stored
directly (no grading), read back as the student sees them and as staff do."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

from app.assignments.history import COLUMNS
from app.grading.schemas import CaseReport, Diagnosis, GradeReport, PublicView
from tests.assignments.conftest import PROBLEM, Course, at
from tests.gradebook.factories import attempt_row, being_graded


def _diagnosis(title: str) -> Diagnosis:
    return Diagnosis(code="c", requirement=None, title=title, explanation="", hint="")


def _case(name: str, visibility: str, status: str) -> CaseReport:
    return CaseReport(name=name, visibility=visibility, status=status)  # type: ignore[arg-type]


REPORT = GradeReport(
    verdict="wrong_answer",
    score=0.6,
    requirements=[],
    diagnoses=[_diagnosis("From the full run")],
    tests=[
        _case("two-heads", "public", "passed"),
        _case("one-head", "public", "failed"),
        _case("hidden-1", "hidden", "passed"),
        _case("hidden-2", "hidden", "failed"),
        _case("hidden-3", "hidden", "failed"),
    ],
    public_view=PublicView(
        requirements=[], diagnoses=[_diagnosis("From the public cases")], hidden_passed=1,
        hidden_total=3,
    ),
)  # fmt: skip
FULL = "1 of 2 public cases passed; 1 of 3 hidden cases passed; From the full run"
SUMMARY = "1 of 2 public cases passed; 1 of 3 hidden cases passed; From the public cases"

# (assignment fields, the graded row's verdict, score and feedback as the student reads them)
POLICIES: dict[str, tuple[dict[str, Any], tuple[str, str, str]]] = {
    "hidden": ({"feedback": "hidden"}, ("wrong_answer", "0.6", "")),
    "visible": ({"feedback": "visible"}, ("wrong_answer", "0.6", FULL)),
    "summary": ({"feedback": "summary"}, ("wrong_answer", "0.6", SUMMARY)),
    "after_due_date, before it": ({"feedback": "after_due_date"}, ("wrong_answer", "0.6", SUMMARY)),
    "after_due_date, after it": (
        {"feedback": "after_due_date", "due_at": at(-1)}, ("wrong_answer", "0.6", FULL)
    ),
    "scores hidden": ({"feedback": "visible", "hide_scores": True}, ("wrong_answer", "", FULL)),
    "hidden, scores hidden": (
        {"feedback": "hidden", "hide_scores": True}, ("wrong_answer", "", "")
    ),
}  # fmt: skip


def _store(course: Course, assignment_id: int, when: datetime, running: bool) -> None:
    """The graded attempt; with ``running``, a second one being graded (a student has one
    unfinished submission at a time)."""
    student = course.people.users["student"]
    graded = attempt_row(assignment_id, student, PROBLEM, 1, when, 0.6, "wrong_answer")
    graded.report = REPORT.model_dump_json()
    rows = [graded]
    if running:
        later = when + timedelta(minutes=1)
        rows.append(being_graded(attempt_row(assignment_id, student, PROBLEM, 2, later, None)))
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        session.add_all(rows)
        session.commit()


def _table(course: Course, assignment_id: int, who: str) -> list[list[str]]:
    response = course.api.get(
        f"{course.base}/{assignment_id}/submissions/me.csv", headers=course.people.headers(who)
    )
    assert response.status_code == 200, response.text
    return list(csv.reader(io.StringIO(response.text)))


def _when(cell: str) -> datetime:
    found = datetime.fromisoformat(cell)
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def test_every_column_under_every_policy(course: Course) -> None:
    when = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    last = 0
    # One policy at a time: a student's strictest policy on a problem cuts every report of theirs
    # on it (tests/assignments/test_strictest_policy.py), so each assignment shows everything
    # before the next is made.
    for name, (fields, (verdict, score, feedback)) in POLICIES.items():
        if last:
            response = course.api.patch(
                f"{course.base}/{last}",
                json={"feedback": "visible", "hide_scores": False},
                headers=course.people.headers("instructor"),
            )
            assert response.status_code == 200, response.text
        last = course.create(title=name, **fields)["id"]
        _store(course, last, when, running=name == "visible")
        header, graded, *rest = _table(course, last, "student")
        assert tuple(header) == COLUMNS and len(rest) == (name == "visible")
        assert _when(graded[0]) == when
        assert graded[1:] == [PROBLEM, "submit", "1", "done", verdict, score, feedback], name
        if name == "visible":
            # Not done yet: no verdict, score or feedback, whatever the policy would show.
            unfinished = rest[0]
            assert _when(unfinished[0]) == when + timedelta(minutes=1)
            assert unfinished[1:] == [PROBLEM, "submit", "2", "running", "", "", ""]
        # Another student's rows are never in it.
        assert _table(course, last, "student_b")[1:] == []
    # Course staff read their own CSV uncut (the last policy: hidden, scores hidden).
    ta = course.people.users["ta"]
    staff_row = attempt_row(last, ta, PROBLEM, 1, when, 0.6)
    staff_row.report = REPORT.model_dump_json()
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        session.add(staff_row)
        session.commit()
    (_, staff) = _table(course, last, "ta")
    assert staff[1:] == [PROBLEM, "submit", "1", "done", "wrong_answer", "0.6", FULL]
