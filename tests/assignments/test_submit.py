"""Submitting in an assignment: dates, attempts (also raced), the per-student rate limit,
examples runs for free, staff practice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select

from app.submissions.models import Submission
from tests.assignments.conftest import PROBLEM, Course, at, error_of
from tests.support.codes import CORRECT, variant


def rows(course: Course) -> list[Submission]:
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        return list(session.scalars(select(Submission).order_by(Submission.created_at)))


def test_graded_submission_is_the_students_attempt(course: Course) -> None:
    created = course.create(max_attempts=2)
    response = course.submit(created["id"], CORRECT, wait=20)
    assert response.status_code == 200, response.text
    assert response.json()["verdict"] == "accepted"
    (row,) = rows(course)
    assert (row.user_id, row.assignment_id, row.graded_attempt) == (
        course.people.users["student"], created["id"], 1
    )  # fmt: skip
    attempts = course.api.get(
        f"{course.base}/{created['id']}/problems/multi-head-attention/attempts",
        headers=course.people.headers("student"),
    ).json()
    assert attempts["attempts_used"] == 1 and attempts["attempts_allowed"] == 2


def test_attempts_run_out_but_examples_stay_free(course: Course) -> None:
    created = course.create(max_attempts=2)
    for n in range(2):
        assert course.submit(created["id"], variant("wrong", n)).status_code == 202
    refused = course.submit(created["id"], variant("wrong", 9))
    assert refused.status_code == 409
    error = error_of(refused)
    assert error["code"] == "attempts_exhausted" and "2 of 2" in error["message"]
    for n in range(3):
        examples = course.submit(created["id"], variant("wrong", 10 + n), mode="examples")
        assert examples.status_code == 202, examples.text
    graded = [r.graded_attempt for r in rows(course) if r.mode == "submit"]
    assert graded == [1, 2]
    assert all(r.graded_attempt is None for r in rows(course) if r.mode == "examples")
    # An extra attempt granted by an override opens one more.
    course.api.post(
        f"{course.base}/{created['id']}/overrides",
        json={"user_id": course.people.users["student"], "extra_attempts": 1},
        headers=course.people.headers("instructor"),
    )
    assert course.submit(created["id"], variant("wrong", 20)).status_code == 202
    assert course.submit(created["id"], variant("wrong", 21)).status_code == 409


def test_concurrent_submissions_take_exactly_max_attempts(course: Course) -> None:
    created = course.create(max_attempts=3)
    with ThreadPoolExecutor(8) as pool:
        statuses = list(
            pool.map(
                lambda n: course.submit(created["id"], variant("wrong", n)).status_code, range(8)
            )
        )
    assert sorted(statuses) == [202] * 3 + [409] * 5, statuses
    assert sorted(r.graded_attempt for r in rows(course)) == [1, 2, 3]


def test_late_window_then_closed(course: Course) -> None:
    created = course.create(
        due_at=at(-2), release_at=at(-5), late_deadlines=[{"until": at(2), "credit": 0.8}]
    )
    path = f"{course.base}/{created['id']}"
    attempts = course.api.get(
        f"{path}/problems/multi-head-attention/attempts", headers=course.people.headers("student")
    ).json()
    assert attempts["open"] and attempts["credit_now"] == 0.8 and attempts["rule"] == "late: 80 %"
    assert course.submit(created["id"], CORRECT).status_code == 202
    assert rows(course)[0].graded_attempt == 1
    course.api.patch(
        path,
        json={"due_at": at(-2), "late_deadlines": [{"until": at(-1), "credit": 0.8}]},
        headers=course.people.headers("instructor"),
    )
    closed = course.submit(created["id"], variant("correct", 1))
    assert closed.status_code == 409
    assert error_of(closed)["code"] == "assignment_closed"
    assert "closed at 20" in error_of(closed)["message"]  # with the date
    assert len(rows(course)) == 1


def test_practice_after_close_costs_no_attempt(course: Course) -> None:
    created = course.create(
        due_at=at(-1), release_at=at(-3), after_close="practice", max_attempts=1
    )
    for n in range(2):
        response = course.submit(created["id"], variant("correct", n))
        assert response.status_code == 202, response.text
    assert [r.graded_attempt for r in rows(course)] == [None, None]


def test_not_released_is_invisible_to_students(course: Course) -> None:
    created = course.create(release_at=at(1), due_at=at(5))
    response = course.submit(created["id"], CORRECT)
    assert response.status_code == 404 and error_of(response)["code"] == "assignment_not_found"
    examples = course.submit(created["id"], CORRECT, mode="examples")
    assert examples.status_code == 404
    staff = course.submit(created["id"], CORRECT, who="instructor")
    assert staff.status_code == 202
    assert rows(course)[0].graded_attempt is None  # staff: practice that never counts


def test_per_student_rate_limit(course: Course) -> None:
    created = course.create(rate_limit=2, rate_window_seconds=600)
    for n in range(2):
        assert course.submit(created["id"], variant("wrong", n)).status_code == 202
    limited = course.submit(created["id"], variant("wrong", 5))
    assert limited.status_code == 429
    assert error_of(limited)["code"] == "assignment_rate_limited"
    assert 1 <= int(limited.headers["Retry-After"]) <= 600
    assert course.submit(created["id"], variant("wrong", 6), mode="examples").status_code == 202
    assert course.submit(created["id"], variant("wrong", 7), who="student_b").status_code == 202


def test_who_may_submit(course: Course) -> None:
    created = course.create()
    for who, status in (("anonymous", 401), ("other_student", 404), ("outsider", 404)):
        assert course.submit(created["id"], CORRECT, who=who).status_code == status, who
    unknown = course.submit(created["id"], CORRECT, problem="softmax-backward")
    assert unknown.status_code == 404
    assert error_of(unknown)["code"] == "problem_not_in_assignment"
    assert rows(course) == []


def test_idempotency_key_replays_without_a_second_attempt(course: Course) -> None:
    created = course.create(max_attempts=1)
    first = course.submit(created["id"], CORRECT, **{"Idempotency-Key": "k1"})
    again = course.submit(created["id"], CORRECT, **{"Idempotency-Key": "k1"})
    assert first.status_code == 202 and again.status_code == 202
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert len(rows(course)) == 1


def test_a_blocked_or_removed_student_cannot_submit(course: Course) -> None:
    from sqlalchemy import update

    from app.courses.models import Membership

    created = course.create()
    for status in ("blocked", "removed"):
        with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
            session.execute(
                update(Membership)
                .where(Membership.user_id == course.people.users["student"])
                .values(status=status)
            )
            session.commit()
        response = course.submit(created["id"], CORRECT)
        assert response.status_code == 403, response.text
        assert error_of(response)["code"] == "membership_inactive"
    assert rows(course) == []


def test_examples_run_after_close_and_keys_are_per_route(course: Course) -> None:
    created = course.create(release_at=at(-5), due_at=at(-1))
    assert course.submit(created["id"], CORRECT).status_code == 409
    assert course.submit(created["id"], CORRECT, mode="examples").status_code == 202
    # The same key and code on the practice route is another request, not a replay.
    key = {"Idempotency-Key": "shared-key"}
    open_one = course.create(title="open")
    first = course.submit(open_one["id"], variant("correct", 1), **key)
    assert first.status_code == 202
    practice = course.api.post(
        "/api/problems/multi-head-attention/submissions",
        json={"code": variant("correct", 1)},
        headers=course.people.headers("student") | key,
    )
    assert practice.status_code == 409
    assert error_of(practice)["code"] == "idempotency_key_reused"


def test_an_identical_resubmission_asks_before_it_costs_an_attempt(course: Course) -> None:
    """Issue 39: the same code again silently cost an attempt."""
    created = course.create(max_attempts=3)
    code = variant("wrong", 1)
    assert course.submit(created["id"], code).status_code == 202
    again = course.submit(created["id"], code)
    assert again.status_code == 409
    error = error_of(again)
    assert error["code"] == "identical_resubmission" and "graded attempt 1" in error["message"]
    assert [r.graded_attempt for r in rows(course)] == [1]  # nothing spent
    # Running the examples on it stays free and unasked.
    assert course.submit(created["id"], code, mode="examples").status_code == 202
    forced = course.api.post(
        f"{course.base}/{created['id']}/problems/{PROBLEM}/submissions",
        json={"code": code, "mode": "submit", "force": True},
        headers=course.people.headers("student"),
    )
    assert forced.status_code == 202, forced.text
    assert sorted(r.graded_attempt for r in rows(course) if r.mode == "submit") == [1, 2]
