"""Statistics per problem: histogram, attempts and time until accepted, pass rates per case
(hidden by index only) and per requirement, diagnoses and pairs, the week's change; the CSV;
staff only."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.grading.schemas import CaseReport, GradeReport, RequirementResult
from app.submissions.models import Submission
from tests.gradebook.factories import MHA, add_attempt, make_assignment
from tests.support.people import People

HOUR = timedelta(hours=1)


def with_cases(sessions: sessionmaker[Session], sid: str, public: str, hidden: str) -> None:
    """The attempt's report gets a public case "shapes" and a hidden case "secret-case-name"
    with these statuses, and requirement r1 passed only when the hidden case did."""
    with sessions() as session:
        row = session.get(Submission, sid)
        assert row is not None and row.report is not None
        report = GradeReport.model_validate_json(row.report)
        report.tests = [
            CaseReport(name="shapes", visibility="public", status=public),  # type: ignore[arg-type]
            CaseReport(name="secret-case-name", visibility="hidden", status=hidden),  # type: ignore[arg-type]
        ]
        report.requirements = [
            RequirementResult(id="r1", title="Scaled", status=hidden)  # type: ignore[arg-type]
        ]
        session.execute(
            update(Submission).where(Submission.id == sid).values(report=report.model_dump_json())
        )
        session.commit()


def test_statistics(api: TestClient, sessions: sessionmaker[Session], people: People) -> None:
    now = utcnow()
    release = now - 20 * 24 * HOUR
    course = people.courses["course"]
    a = make_assignment(sessions, course, release_at=release, due_at=now + 24 * HOUR)
    s, b = people.users["student"], people.users["student_b"]
    # student: wrong twice (no-scale + missing-wo) 10 days ago, accepted on attempt 3 today.
    add_attempt(sessions, a, s, MHA, 1, now - 10 * 24 * HOUR, 0.2, codes=["no-scale", "missing-wo"])
    add_attempt(sessions, a, s, MHA, 2, now - 9 * 24 * HOUR, 0.3, codes=["no-scale"])
    last = add_attempt(sessions, a, s, MHA, 3, release + 48 * HOUR, 1.0)
    with_cases(sessions, last, "passed", "passed")
    # student_b: wrong twice in the last week, both diagnoses: stuck.
    add_attempt(sessions, a, b, MHA, 1, now - 2 * HOUR, 0.4, codes=["no-scale", "missing-wo"])
    wrong = add_attempt(sessions, a, b, MHA, 2, now - HOUR, 0.4, codes=["missing-wo", "no-scale"])
    with_cases(sessions, wrong, "passed", "failed")

    url = f"/api/courses/{course}/assignments/{a}/statistics"
    assert api.get(url, headers=people.headers("student")).status_code == 403
    r = api.get(url, headers=people.headers("ta"))
    assert r.status_code == 200, r.text
    assert "secret-case-name" not in r.text  # a hidden case by its index only
    mha = r.json()["problems"][0]
    assert (mha["students"], mha["graded"], mha["accepted"], mha["stuck"]) == (3, 2, 1, 1)
    # student 10/10 in the last bin, student_b 4/10 in the 40-50 % bin.
    assert mha["histogram"] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert mha["attempts_until_accepted"] == {"3": 1}
    assert mha["median_hours_to_first_accepted"] == 48.0
    assert mha["cases"] == [
        {"index": 0, "hidden": False, "name": "shapes", "passed": 2, "total": 2},
        {"index": 1, "hidden": True, "name": None, "passed": 1, "total": 2},
    ]
    assert [(x["name"], x["passed"], x["total"]) for x in mha["requirements"]] == [
        ("r1: Scaled", 1, 2)
    ]
    assert mha["diagnoses"] == [
        {"codes": ["missing-wo"], "students": 1},
        {"codes": ["no-scale"], "students": 1},
    ]
    assert mha["pairs"] == [{"codes": ["missing-wo", "no-scale"], "students": 1}]
    week = {t["code"]: (t["last_7_days"], t["previous_7_days"]) for t in mha["week"]}
    assert week == {"missing-wo": (2, 1), "no-scale": (2, 2)}

    text = api.get(f"{url}.csv", headers=people.headers("ta")).text
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["problem_id", "measure", "key", "value", "total"]
    assert [MHA, "case_pass", "hidden #2", "1", "2"] in table
    assert [MHA, "diagnosis_pair", "missing-wo + no-scale", "1", "2"] in table
    assert "secret-case-name" not in text
