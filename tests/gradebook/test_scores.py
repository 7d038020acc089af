"""Scores against hand-computed expectations: best and last attempt, late credit, attempt
penalties, an extension, a section override, an adjustment replacing and clearing a score, and
scores hidden from students until published."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment
from app.db.base import utcnow
from tests.gradebook.factories import MHA, SOFTMAX, T0, add_attempt, add_override, make_assignment
from tests.support.people import People

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def base(people: People) -> str:
    return f"/api/courses/{people.courses['course']}/assignments"


def gradebook(api: TestClient, people: People, assignment: int, **params: str) -> dict[str, Any]:
    r = api.get(f"{base(people)}/{assignment}/gradebook", params=params,
                headers=people.headers("instructor"))  # fmt: skip
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def cell(book: dict[str, Any], people: People, who: str, problem: str) -> dict[str, Any]:
    row = next(s for s in book["students"] if s["user_id"] == people.users[who])
    found: dict[str, Any] = next(c for c in row["cells"] if c["problem_id"] == problem)
    return found


def three_attempts(sessions: sessionmaker[Session], people: People, scoring: str) -> int:
    """Due T0 at 100 %, a week late at 80 %, penalties 0 then 10 %; the student's attempts:
    #1 on time 0.5 (5 points of 10), #2 a day late 1.0 (1 × 0.8 × 0.9: 7.2),
    #3 two days late 0.0 (0)."""
    a = make_assignment(sessions, people.courses["course"], late=[(T0 + 7 * DAY, 0.8)],
                        penalties=[0, 0.1], scoring=scoring)  # fmt: skip
    student = people.users["student"]
    add_attempt(sessions, a, student, MHA, 1, T0 - HOUR, 0.5)
    add_attempt(sessions, a, student, MHA, 2, T0 + DAY, 1.0)
    add_attempt(sessions, a, student, MHA, 3, T0 + 2 * DAY, 0.0)
    return a


def test_best_attempt_with_late_credit_and_penalty(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert c["points"] == pytest.approx(7.2)
    assert c["rule"] == "best attempt (2): late: 80 %, attempt 2: 90 %"
    assert c["decided_by_attempt"] == 2
    assert c["attempts_used"] == 3
    assert c["last_verdict"] == "wrong_answer"
    untouched = cell(gradebook(api, people, a), people, "student", SOFTMAX)
    assert untouched["points"] == 0 and untouched["rule"] == "no graded attempt"


def test_last_attempt_counts_even_when_lower(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "last")
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert c["points"] == 0
    assert c["rule"] == "last attempt (3): late: 80 %, attempt 3: 90 %"


def test_on_time_attempt_has_full_credit(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = make_assignment(sessions, people.courses["course"], late=[(T0 + 7 * DAY, 0.8)])
    add_attempt(sessions, a, people.users["student"], MHA, 1, T0 - HOUR, 0.75)
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert c["points"] == pytest.approx(7.5)
    assert c["rule"] == "best attempt (1): on time: 100 %"


def test_personal_extension_gives_full_credit_until_its_date(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    add_override(sessions, a, user_id=people.users["student"], until=T0 + 3 * DAY)
    c = cell(gradebook(api, people, a), people, "student", MHA)
    # Attempt 2 a day late falls inside the extension: 1 × 1.0 × 0.9.
    assert c["points"] == pytest.approx(9.0)
    assert c["rule"] == "best attempt (2): extension: 100 %, attempt 2: 90 %"
    row = next(
        s for s in gradebook(api, people, a)["students"] if s["user_id"] == people.users["student"]
    )
    assert row["due_at"].startswith((T0 + 3 * DAY).isoformat()[:19])


def test_a_personal_extension_is_only_its_students(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    """The same late attempt from the student with the extension, a classmate in another
    section and one in no section: only the first has the extension's credit and due date."""
    a = make_assignment(sessions, people.courses["course"], late=[(T0 + 7 * DAY, 0.8)])
    add_override(sessions, a, user_id=people.users["student"], until=T0 + 3 * DAY)
    for who in ("student", "student_b", "unsectioned"):
        add_attempt(sessions, a, people.users[who], MHA, 1, T0 + DAY, 1.0)
    book = gradebook(api, people, a)
    assert cell(book, people, "student", MHA)["rule"] == "best attempt (1): extension: 100 %"
    due = {s["user_id"]: s["due_at"][:19] for s in book["students"]}
    for who in ("student_b", "unsectioned"):
        c = cell(book, people, who, MHA)
        assert (c["points"], c["rule"]) == (pytest.approx(8.0), "best attempt (1): late: 80 %")
        assert due[people.users[who]] == T0.isoformat()[:19], who


def test_section_override_applies_to_its_section_only(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = make_assignment(sessions, people.courses["course"], late=[(T0 + 7 * DAY, 0.8)])
    add_override(sessions, a, section="B", until=T0 + 10 * DAY, credit=0.5)
    # After the last deadline (closed): nothing, except for section B's 50 % window.
    add_attempt(sessions, a, people.users["student_b"], MHA, 1, T0 + 8 * DAY, 1.0)
    add_attempt(sessions, a, people.users["student"], MHA, 1, T0 + 8 * DAY, 1.0)
    book = gradebook(api, people, a)
    b = cell(book, people, "student_b", MHA)
    assert b["points"] == pytest.approx(5.0)
    assert b["rule"] == "best attempt (1): override: 50 %"
    other = cell(book, people, "student", MHA)
    assert other["points"] == 0
    assert other["rule"] == "best attempt (1): closed: the last deadline has passed"
    only_b = gradebook(api, people, a, section="B")
    assert [s["user_id"] for s in only_b["students"]] == [people.users["student_b"]]
    assert only_b["sections"] == ["A", "B"]


def test_pending_attempt_counts_as_used_but_not_scored(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = make_assignment(sessions, people.courses["course"], max_attempts=3)
    add_override(sessions, a, user_id=people.users["student"], extra_attempts=2)
    add_attempt(sessions, a, people.users["student"], MHA, 1, T0 - HOUR, 0.4)
    add_attempt(sessions, a, people.users["student"], MHA, 2, T0 - HOUR / 2, None)
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert (c["points"], c["attempts_used"], c["pending"]) == (pytest.approx(4.0), 2, 1)
    assert c["attempts_allowed"] == 5
    assert cell(gradebook(api, people, a), people, "student_b", MHA)["attempts_allowed"] == 3


def test_adjustment_replaces_and_clearing_restores(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    url = f"{base(people)}/{a}/adjustments"
    body = {"user_id": people.users["student"], "problem_id": MHA, "score": 3,
            "comment": "copied from a classmate"}  # fmt: skip
    r = api.post(url, json=body, headers=people.headers("ta"))
    assert r.status_code == 201, r.text
    assert (r.json()["old_score"], r.json()["score"]) == (pytest.approx(7.2), 3)
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert (c["points"], c["adjusted"], c["computed_points"]) == (3, True, pytest.approx(7.2))
    assert c["rule"] == "adjusted: copied from a classmate"
    me = api.get(f"{base(people)}/{a}/grades/me", headers=people.headers("student")).json()
    assert me["problems"][0]["points"] == 3 and me["total"] == 3

    body |= {"score": 9.5, "comment": "a second look"}
    assert api.post(url, json=body, headers=people.headers("instructor")).status_code == 201
    body |= {"score": None, "comment": "back to the grader's"}
    r = api.post(url, json=body, headers=people.headers("instructor"))
    assert r.status_code == 201 and r.json()["old_score"] == 9.5 and r.json()["score"] is None
    c = cell(gradebook(api, people, a), people, "student", MHA)
    assert (c["points"], c["adjusted"]) == (pytest.approx(7.2), False)

    log = api.get(url, headers=people.headers("ta")).json()["adjustments"]
    assert [(e["old_score"], e["score"], e["comment"], e["created_by_name"]) for e in log] == [
        (pytest.approx(7.2), 3, "copied from a classmate", "Ta"),
        (3, 9.5, "a second look", "Instructor"),
        (9.5, None, "back to the grader's", "Instructor"),
    ]
    assert all(e["student_name"] == "Student" for e in log)


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"score": 10.5}, 409, "score_out_of_range"),
        ({"score": -1}, 422, "invalid_request"),
        ({"comment": "   "}, 422, "invalid_request"),
        ({"comment": ""}, 422, "invalid_request"),
        ({"problem_id": "causal-attention"}, 404, "problem_not_in_assignment"),
        ({"user_id": 0}, 422, "invalid_request"),
        ({"score": None}, 409, "nothing_to_clear"),
        ({"extra": 1}, 422, "invalid_request"),
    ],
)
def test_bad_adjustment_is_refused_and_changes_nothing(
    api: TestClient,
    sessions: sessionmaker[Session],
    people: People,
    change: dict[str, Any],
    status: int,
    code: str,
) -> None:
    a = three_attempts(sessions, people, "best")
    body = {"user_id": people.users["student"], "problem_id": MHA, "score": 3, "comment": "x"}
    r = api.post(f"{base(people)}/{a}/adjustments", json=body | change,
                 headers=people.headers("instructor"))  # fmt: skip
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
    log = api.get(f"{base(people)}/{a}/adjustments", headers=people.headers("instructor"))
    assert log.json()["adjustments"] == []


def test_adjusting_a_non_student_is_refused(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    for who in ("ta", "other_student", "outsider"):
        body = {"user_id": people.users[who], "problem_id": MHA, "score": 3, "comment": "x"}
        r = api.post(f"{base(people)}/{a}/adjustments", json=body,
                     headers=people.headers("instructor"))  # fmt: skip
        assert (r.status_code, r.json()["error"]["code"]) == (404, "student_not_found")


def test_hidden_scores_until_published(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    with sessions() as session:
        row = session.get(Assignment, a)
        assert row is not None
        row.hide_scores = True
        session.commit()
    url = f"{base(people)}/{a}/grades/me"
    hidden = api.get(url, headers=people.headers("student")).json()
    assert hidden["scores_hidden"] is True and hidden["total"] is None
    assert hidden["max_total"] == 15
    p = hidden["problems"][0]
    assert (p["points"], p["rule"], p["attempts_used"], p["last_verdict"]) == (
        None, None, 3, "wrong_answer",
    )  # fmt: skip
    # Staff see them all along.
    assert cell(gradebook(api, people, a), people, "student", MHA)["points"] == pytest.approx(7.2)
    with sessions() as session:
        row = session.get(Assignment, a)
        assert row is not None
        row.scores_published_at = utcnow() - timedelta(seconds=1)
        session.commit()
    shown = api.get(url, headers=people.headers("student")).json()
    assert shown["scores_hidden"] is False
    assert shown["total"] == pytest.approx(7.2)
    assert shown["problems"] == [
        {"problem_id": MHA, "title": "Multi-head attention", "points": pytest.approx(7.2),
         "max_points": 10, "rule": "best attempt (2): late: 80 %, attempt 2: 90 %",
         "attempts_used": 3, "attempts_allowed": None, "last_verdict": "wrong_answer",
         "comment": None, "hints": []},
        {"problem_id": SOFTMAX, "title": shown["problems"][1]["title"], "points": 0,
         "max_points": 5, "rule": "no graded attempt", "attempts_used": 0,
         "attempts_allowed": None, "last_verdict": None, "comment": None, "hints": []},
    ]  # fmt: skip


def test_grades_me_shows_only_the_callers_own(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = three_attempts(sessions, people, "best")
    mine = api.get(f"{base(people)}/{a}/grades/me", headers=people.headers("student_b")).json()
    assert mine["total"] == 0
    assert [p["attempts_used"] for p in mine["problems"]] == [0, 0]


def test_unreleased_assignment_is_invisible_to_students(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a = make_assignment(sessions, people.courses["course"], release_at=utcnow() + DAY)
    r = api.get(f"{base(people)}/{a}/grades/me", headers=people.headers("student"))
    assert (r.status_code, r.json()["error"]["code"]) == (404, "assignment_not_found")
    assert api.get(f"{base(people)}/{a}/gradebook", headers=people.headers("ta")).status_code == 200
