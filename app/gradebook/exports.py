"""The gradebook as CSV: one row per student, one row per graded attempt, and Canvas's
gradebook-import layout.

Every cell that a spreadsheet would read as a formula (it begins with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return) is prefixed with ``'``: a student's name is the student's to choose,
and ``=HYPERLINK(...)`` in a name must stay text when an instructor opens the file. Numbers are
written by this module, never from user text, so negative numbers cannot occur and none is
escaped.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from app.gradebook.comments import Target
from app.gradebook.schemas import FeedbackOut
from app.gradebook.scores import AttemptCredit, AttemptRow, Gradebook

Texts = dict[Target, FeedbackOut]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe(value: object) -> str:
    """A cell's text, escaped against formula injection."""
    if value is None:
        return ""
    if isinstance(value, float):
        return _number(value)
    text = str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def _number(value: float) -> str:
    return f"{round(value, 4):g}"


def _write(rows: Iterable[Sequence[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for row in rows:
        writer.writerow([safe(cell) for cell in row])
    return buffer.getvalue()


def _text(texts: Texts, target: Target) -> str | None:
    found = texts.get(target)
    return None if found is None else found.body


def gradebook_csv(book: Gradebook, texts: Texts) -> str:
    """Name, email, section, status, one column per problem (its points in force), total; then
    per problem the comment to the student and the staff note (markdown, as written)."""
    header: list[object] = ["name", "email", "section", "status"]
    header += [f"{p.title} ({p.problem_id}) [{_number(p.points)}]" for p in book.problems]
    header += [f"total [{_number(book.max_total)}]"]
    for p in book.problems:
        header += [f"comment ({p.problem_id})", f"staff note ({p.problem_id})"]
    rows: list[list[object]] = [header]
    for r in book.rows:
        s = r.student
        said: list[object] = []
        for p in book.problems:
            for kind in ("comment", "note"):
                said.append(_text(texts, (s.user_id, p.problem_id, None, kind)))
        rows.append(
            [s.name, s.email, s.section, s.status, *(c.points for c in r.cells), r.total, *said]
        )
    return _write(rows)


ATTEMPT_HEADER: list[object] = [
    "name", "email", "section", "problem_id", "attempt", "submission_id", "submitted_at",
    "status", "verdict", "raw_score", "credit", "points", "max_points", "rule", "comment",
    "staff_note",
]  # fmt: skip


def attempts_csv(
    book: Gradebook, credits: Sequence[tuple[AttemptRow, AttemptCredit | None]], texts: Texts
) -> str:
    """Long form: one row per graded attempt, with what the policy made of it and the
    attempt's comment and staff note."""
    students = {r.student.user_id: r.student for r in book.rows}
    points = {p.problem_id: p.points for p in book.problems}
    rows: list[list[object]] = [ATTEMPT_HEADER]
    for attempt, credit in credits:
        s = students[attempt.user_id]
        rows.append(
            [
                s.name,
                s.email,
                s.section,
                attempt.problem_id,
                attempt.number,
                attempt.submission_id,
                attempt.received_at.isoformat(),
                attempt.status,
                attempt.verdict,
                attempt.score,
                None if credit is None else credit.fraction,
                None if credit is None else credit.points,
                points.get(attempt.problem_id),
                None if credit is None else credit.rule,
                _text(
                    texts, (attempt.user_id, attempt.problem_id, attempt.submission_id, "comment")
                ),
                _text(texts, (attempt.user_id, attempt.problem_id, attempt.submission_id, "note")),
            ]
        )
    return _write(rows)


CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_csv(book: Gradebook, canvas_assignment_id: int | None) -> str:
    """Canvas's gradebook import: the student columns Canvas matches on, then one column for
    this assignment (its total), and the "Points Possible" row under the header.

    Canvas matches a student by its own ID, the SIS User ID or the SIS Login ID: this service
    knows none of Canvas's ids, so "ID" and "SIS User ID" stay empty and "SIS Login ID" is the
    student's email (set the login ids to emails, or edit the column). The assignment column is
    "Title (id)" with the Canvas assignment's id when given, which updates that assignment;
    without it, "Title" alone, which Canvas offers to create as a new assignment. Removed
    students are left out (they are no longer in the Canvas course either). A student who
    never attempted any problem (and has no score set by hand) gets an empty cell: a 0 would
    overwrite what Canvas has (an excused or missing mark) with a grade nobody gave."""
    title = book.assignment.title
    column = f"{title} ({canvas_assignment_id})" if canvas_assignment_id else title
    rows: list[list[object]] = [
        [*CANVAS_HEADER, column],
        ["Points Possible", "", "", "", "", book.max_total],
    ]
    for r in book.rows:
        s = r.student
        if s.status == "removed":
            continue
        tried = any(c.attempts_used or c.adjusted for c in r.cells)
        rows.append([s.name, "", "", s.email, s.section, r.total if tried else None])
    return _write(rows)
