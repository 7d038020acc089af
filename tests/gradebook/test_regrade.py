"""Regrading an assignment: every graded attempt graded again by the real sandbox, and the
scores follow the new gradings. Also one student's record: code, report, timestamps."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.submissions.models import Grading, Submission
from tests.gradebook.factories import MHA, make_assignment
from tests.support.codes import CORRECT, WRONG
from tests.support.people import People


def grade(api: TestClient, people: People, who: str, code: str) -> str:
    """A real submission, graded, then made an attempt of the assignment (as the assignment
    route would have made it)."""
    r = api.post(f"/api/problems/{MHA}/submissions?wait=30", json={"code": code},
                 headers=people.headers(who))  # fmt: skip
    assert r.status_code == 200, r.text
    submission_id: str = r.json()["id"]
    return submission_id


def attach(sessions: sessionmaker[Session], a: int, user_id: int, sid: str, n: int) -> None:
    with sessions() as session:
        session.execute(
            update(Submission).where(Submission.id == sid)
            .values(assignment_id=a, user_id=user_id, graded_attempt=n)
        )  # fmt: skip
        session.commit()


def wait_done(sessions: sessionmaker[Session], ids: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sessions() as session:
            states = session.scalars(select(Submission.status).where(Submission.id.in_(ids)))
            if all(s == "done" for s in states):
                return
        time.sleep(0.2)
    raise AssertionError("regrades not finished")


def test_regrade_all_and_scores_follow(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    course = people.courses["course"]
    a = make_assignment(sessions, course, due_at=utcnow().replace(year=2100))
    right = grade(api, people, "student", CORRECT)
    wrong = grade(api, people, "student_b", WRONG)
    attach(sessions, a, people.users["student"], right, 1)
    attach(sessions, a, people.users["student_b"], wrong, 1)
    base = f"/api/courses/{course}/assignments/{a}"
    book = api.get(f"{base}/gradebook", headers=people.headers("ta")).json()
    totals = {r["user_id"]: r["total"] for r in book["students"]}
    assert totals[people.users["student"]] == 10
    assert totals[people.users["student_b"]] < 10

    # The test set "changed": the stored results are stale (here: swapped by hand), and the
    # regrade grades the code again, so the real verdicts come back.
    with sessions() as session:
        session.execute(update(Submission).where(Submission.id == right)
                        .values(score=0.0, verdict="wrong_answer"))  # fmt: skip
        session.commit()
    stale = api.get(f"{base}/gradebook", headers=people.headers("ta")).json()
    assert {r["user_id"]: r["total"] for r in stale["students"]}[people.users["student"]] == 0

    assert api.post(f"{base}/regrade", headers=people.headers("ta")).status_code == 403
    r = api.post(f"{base}/regrade", headers=people.headers("instructor"))
    assert r.status_code == 202, r.text
    assert r.json() == {"queued": 2, "skipped": 0, "queue_full": False}
    wait_done(sessions, [right, wrong])
    with sessions() as session:
        runs = session.execute(select(Grading.submission_id, Grading.run)).all()
    assert sorted(run for sid, run in runs if sid == right) == [1, 2]
    after = api.get(f"{base}/gradebook", headers=people.headers("ta")).json()
    assert {r["user_id"]: r["total"] for r in after["students"]} == totals

    # One student's record: every submission with its code, report and timestamps.
    record = api.get(f"{base}/students/{people.users['student_b']}",
                     headers=people.headers("ta")).json()  # fmt: skip
    (sub,) = record["submissions"]
    assert sub["id"] == wrong and sub["code"] == WRONG and sub["attempt"] == 1
    assert sub["report"]["verdict"] == "wrong_answer"
    assert any(d["code"] == "missing-wo" for d in sub["report"]["diagnoses"])
    assert sub["credit_rule"] == "on time: 100 %"
    assert sub["created_at"] and sub["finished_at"]
    assert record["cells"][0]["diagnosis"]["code"] == "missing-wo"
    assert record["total"] == totals[people.users["student_b"]]


def test_regrade_skips_running_and_stops_at_a_full_queue(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    from datetime import timedelta

    from app.gradebook.regrade import regrade_all
    from app.gradebook.service import GradebookService
    from app.submissions.service import SubmissionService
    from tests.gradebook.factories import T0, add_attempt

    course = people.courses["course"]
    a = make_assignment(sessions, course)
    s, b = people.users["student"], people.users["student_b"]
    running = add_attempt(sessions, a, s, MHA, 1, T0, None)
    with sessions() as session:  # a worker holds it (a lease far ahead): not regradable now
        session.execute(update(Submission).where(Submission.id == running).values(
            status="running", lease_token="held", lease_expires_at=utcnow() + timedelta(hours=1)
        ))  # fmt: skip
        session.commit()
    first = add_attempt(sessions, a, s, MHA, 2, T0 + timedelta(minutes=1), 0.5)
    second = add_attempt(sessions, a, b, MHA, 1, T0 + timedelta(minutes=2), 0.5)

    class Nowhere:
        def dispatch(self, submission_id: str) -> None:
            """The embedded pool still polls the database; nothing else to tell."""

        def reserve(self) -> None:
            return None

    settings = api.app.state.settings.model_copy(update={"queue_max": 2})  # type: ignore[attr-defined]
    out = regrade_all(
        GradebookService(sessions, {}), SubmissionService(settings, sessions, Nowhere()), course, a
    )
    # The running one is skipped; the first regrade fills the queue (2 active); the second is
    # refused and counted as skipped.
    assert (out.queued, out.skipped, out.queue_full) == (1, 2, True)
    with sessions() as session:
        runs = dict(session.execute(select(Submission.id, Submission.run)).all())
    assert (runs[running], runs[first], runs[second]) == (1, 2, 1)
