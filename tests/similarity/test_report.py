"""The report through the API: the course's staff queue it, the runner computes it in the
background, the planted copies rank first with their evidence and open side by side; a job
left running by a process that stopped is computed again; nobody else reaches any of it (the
course's students are refused, 403; other courses and outsiders see no course, 404)."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.courses.models import Membership
from app.db.base import utcnow
from app.similarity import repository
from app.similarity.runner import run_due
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.similarity.conftest import STARTER, ClassWork
from tests.support.people import add_student

STARTERS = {MHA: STARTER}
LEASE = timedelta(minutes=5)


def test_staff_queue_the_report_and_the_copies_rank_first(
    api: TestClient, sessions: sessionmaker[Session], work: ClassWork
) -> None:
    ta = work.people.headers("ta")
    assert api.get(work.base, headers=ta).json()["status"] == "none"
    queued = api.post(work.base, headers=ta)
    assert queued.status_code == 202, queued.text
    assert queued.json()["status"] == "queued"
    assert run_due(sessions, STARTERS, LEASE) == 1
    report = api.get(work.base, headers=ta).json()
    assert report["status"] == "done" and report["students"] == len(work.codes)
    users = {work.people.users[k]: k for k in ("reshape", "copy_renamed", "copy_reordered")}
    top = report["pairs"]
    assert len(top) == 3
    assert all({p["a_user_id"], p["b_user_id"]} <= set(users) for p in top)
    assert top[0]["flagged"] and "distinctive code" in top[0]["evidence"][0]["text"]

    side = api.get(f"{work.base}/pairs/1", headers=ta)
    assert side.status_code == 200, side.text
    detail = side.json()
    by_user = {work.people.users[k]: c for k, c in work.codes.items()}
    assert detail["a_code"] == by_user[top[0]["a_user_id"]]
    assert detail["b_code"] == by_user[top[0]["b_user_id"]]
    first, last = detail["pair"]["a_lines"][0]
    assert 1 <= first <= last <= detail["a_code"].count("\n")
    assert api.get(f"{work.base}/pairs/4", headers=ta).status_code == 404


def test_students_and_other_courses_never_reach_it(
    api: TestClient, sessions: sessionmaker[Session], work: ClassWork
) -> None:
    assert api.post(work.base, headers=work.people.headers("instructor")).status_code == 202
    run_due(sessions, STARTERS, LEASE)
    for who in ("copy_renamed", "student", "other_student", "other_instructor", "outsider"):
        for response in (
            api.get(work.base, headers=work.people.headers(who)),
            api.post(work.base, headers=work.people.headers(who)),
            api.get(f"{work.base}/pairs/1", headers=work.people.headers(who)),
        ):
            # A student of the course is told it is for staff; anyone else sees no course.
            assert response.status_code in (403, 404), (who, response.text)
            assert "pairs" not in response.json() and "code" in response.json()["error"]


def test_a_problem_outside_the_assignment_is_not_found(api: TestClient, work: ClassWork) -> None:
    outside = work.base.replace(MHA, "causal-attention")
    response = api.post(outside, headers=work.people.headers("ta"))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "problem_not_found"


def test_a_report_left_running_by_a_stopped_process_is_computed_again(
    api: TestClient, sessions: sessionmaker[Session], work: ClassWork
) -> None:
    api.post(work.base, headers=work.people.headers("ta"))
    with sessions() as session:
        # A runner took it an hour ago and never came back (its process stopped).
        taken = repository.claim(session, utcnow() - timedelta(hours=1), LEASE)
        assert taken is not None
    assert api.get(work.base, headers=work.people.headers("ta")).json()["status"] == "running"
    # A live lease is left alone.
    with sessions() as session:
        row = repository.find(session, work.assignment_id, MHA)
        assert row is not None
        row.claimed_until = utcnow() + LEASE
        session.commit()
    assert run_due(sessions, STARTERS, LEASE) == 0
    with sessions() as session:
        row = repository.find(session, work.assignment_id, MHA)
        assert row is not None
        row.claimed_until = utcnow() - timedelta(seconds=1)
        session.commit()
    assert run_due(sessions, STARTERS, LEASE) == 1
    report = api.get(work.base, headers=work.people.headers("ta")).json()
    assert report["status"] == "done" and len(report["pairs"]) == 3


def test_a_reader_cut_elsewhere_sees_shared_code_only(
    api: TestClient, sessions: sessionmaker[Session], work: ClassWork
) -> None:
    """The TA is also a student of the problem in the other course, where its feedback is
    hidden: what the report says about diagnoses and failing cases is not for them; the
    instructor sees it."""
    for key in ("twin_a", "twin_b"):
        user = add_student(sessions, work.people, key)
        add_attempt(
            sessions,
            work.assignment_id,
            user,
            MHA,
            1,
            T0,
            0.2,
            codes=["no-scale", "reshape-order"],
            code=f"x = {len(key)}\n",
        )
    elsewhere = make_assignment(sessions, work.people.courses["other_course"], feedback="hidden")
    assert elsewhere
    with sessions() as session:
        session.add(
            Membership(
                course_id=work.people.courses["other_course"],
                user_id=work.people.users["ta"],
                role="student",
            )
        )
        session.commit()
    api.post(work.base, headers=work.people.headers("instructor"))
    run_due(sessions, STARTERS, LEASE)

    def kinds(who: str) -> set[str]:
        report = api.get(work.base, headers=work.people.headers(who)).json()
        return {e["kind"] for p in report["pairs"] for e in p["evidence"]}

    assert kinds("instructor") == {"code", "diagnoses"}
    assert kinds("ta") == {"code"}
