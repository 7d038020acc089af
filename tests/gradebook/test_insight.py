"""Class insight: the diagnoses of each student's latest graded attempt, and who is stuck."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import create_user
from app.courses.models import Membership
from tests.gradebook.factories import MHA, SOFTMAX, T0, add_attempt, make_assignment
from tests.support.people import People

HOUR = timedelta(hours=1)


def test_insight_counts_latest_attempts(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    course = people.courses["course"]
    with sessions() as session:
        third = create_user(session, "third@example.edu", "Third", "member")
        session.add(Membership(course_id=course, user_id=third.id, role="student", section="A"))
        session.commit()
        third_id = third.id
    a = make_assignment(sessions, course)
    s, b = people.users["student"], people.users["student_b"]
    # student: missing-wo, then missing-wo and no-scale (latest counts).
    add_attempt(sessions, a, s, MHA, 1, T0 - 3 * HOUR, 0.0, codes=["missing-wo"])
    add_attempt(sessions, a, s, MHA, 2, T0 - 2 * HOUR, 0.0, codes=["missing-wo", "no-scale"])
    # student_b: missing-wo only.
    add_attempt(sessions, a, b, MHA, 1, T0 - 2 * HOUR, 0.0, codes=["missing-wo"])
    # third: missing-wo once, accepted since: not stuck, and not counted.
    add_attempt(sessions, a, third_id, MHA, 1, T0 - 3 * HOUR, 0.0, codes=["missing-wo"])
    add_attempt(sessions, a, third_id, MHA, 2, T0 - HOUR, 1.0)
    # a runtime error without a diagnosis on the other problem; a pending one is not graded.
    add_attempt(sessions, a, s, SOFTMAX, 1, T0 - HOUR, 0.0, verdict="runtime_error")
    add_attempt(sessions, a, b, SOFTMAX, 1, T0 - HOUR, None)

    r = api.get(f"/api/courses/{course}/assignments/{a}/insight", headers=people.headers("ta"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["students"] == 4  # and unsectioned, who attempted nothing
    mha, soft = body["problems"]
    # Stuck: student (two wrong, none accepted); not student_b (one wrong attempt only).
    assert (mha["problem_id"], mha["attempted"], mha["accepted"], mha["stuck"]) == (MHA, 3, 1, 1)
    assert mha["verdicts"] == {"wrong_answer": 2, "accepted": 1}
    assert mha["diagnoses"] == [
        {"code": "missing-wo", "title": "Title of missing-wo", "students": 2, "stuck": 1},
        {"code": "no-scale", "title": "Title of no-scale", "students": 1, "stuck": 1},
    ]
    assert (soft["attempted"], soft["stuck"], soft["verdicts"]) == (1, 0, {"runtime_error": 1})
    assert soft["diagnoses"] == []

    only_b = api.get(f"/api/courses/{course}/assignments/{a}/insight", params={"section": "B"},
                     headers=people.headers("ta")).json()  # fmt: skip
    assert only_b["students"] == 1
    assert only_b["problems"][0]["diagnoses"] == [
        {"code": "missing-wo", "title": "Title of missing-wo", "students": 1, "stuck": 0}
    ]
    # The gradebook shows each cell's latest diagnosis.
    book = api.get(f"/api/courses/{course}/assignments/{a}/gradebook",
                   headers=people.headers("ta")).json()  # fmt: skip
    cells = {row["user_id"]: row["cells"][0] for row in book["students"]}
    assert cells[s]["diagnosis"] == {"code": "missing-wo", "title": "Title of missing-wo"}
    assert cells[third_id]["diagnosis"] is None and cells[third_id]["last_verdict"] == "accepted"


def test_stuck_means_never_accepted_and_the_last_two_wrong(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    """Issue 39: a student with full marks whose latest attempt failed was counted stuck."""
    course = people.courses["course"]
    a = make_assignment(sessions, course)
    s, b = people.users["student"], people.users["student_b"]
    # student: accepted (full marks), then a wrong resubmission: not stuck.
    add_attempt(sessions, a, s, MHA, 1, T0 - 3 * HOUR, 1.0)
    add_attempt(sessions, a, s, MHA, 2, T0 - 2 * HOUR, 0.0, codes=["missing-wo"])
    add_attempt(sessions, a, s, MHA, 3, T0 - HOUR, 0.0, codes=["missing-wo"])
    # student_b: three wrong attempts, never accepted: stuck.
    for n in (1, 2, 3):
        add_attempt(sessions, a, b, MHA, n, T0 - (4 - n) * HOUR, 0.2, codes=["missing-wo"])
    r = api.get(f"/api/courses/{course}/assignments/{a}/insight", headers=people.headers("ta"))
    mha = r.json()["problems"][0]
    assert (mha["attempted"], mha["accepted"], mha["stuck"]) == (2, 0, 1)
    assert mha["diagnoses"][0] == {
        "code": "missing-wo", "title": "Title of missing-wo", "students": 2, "stuck": 1
    }  # fmt: skip
