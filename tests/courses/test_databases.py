"""The roster's queries on both databases: an upload, its re-upload, a refused file, the search
and the section counts, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from app.core.errors import ApiError
from app.courses import service
from app.courses.schemas import MemberUpdate
from app.main import create_app
from tests.conftest import truncate_all
from tests.courses.conftest import snapshot
from tests.instructors.conftest import make_settings
from tests.support.people import seed_people


def test_the_roster_on_both_databases(tmp_path: Path, database_url: str | None) -> None:
    with TestClient(create_app(make_settings(tmp_path / "data", database_url))) as client:
        sessions = client.app.state.sessions  # type: ignore[attr-defined]
        people = seed_people(sessions)
        course = people.courses["course"]
        url = f"/api/courses/{course}/roster"
        headers = {**people.headers("instructor"), "Content-Type": "text/csv"}
        text = "email,name,section\n" + "".join(
            f"p_{i}@example.edu,P {i},S{i % 3}\n" for i in range(600)
        )
        first = client.post(url, content=text.encode(), headers=headers)
        assert first.status_code == 200, first.text
        assert first.json()["created"] == 600
        before = snapshot(sessions)
        assert client.post(url, content=text.encode(), headers=headers).json()["unchanged"] == 600
        bad = text + "p_1@example.edu,Again,S1\n"
        refused = client.post(url, content=bad.encode(), headers=headers)
        assert refused.status_code == 422
        assert refused.json()["rows"][0]["line"] == 602
        assert snapshot(sessions) == before

        staff = people.headers("ta")
        found = client.get(f"/api/courses/{course}/members?q=p_59", headers=staff).json()
        assert {m["email"] for m in found["items"]} == {
            "p_59@example.edu",
            *(f"p_59{i}@example.edu" for i in range(10)),
        }
        sections = client.get(f"/api/courses/{course}/sections", headers=staff).json()
        counts = {s["name"]: s["students"] for s in sections["sections"]}
        assert counts == {"A": 1, "B": 1, "S0": 200, "S1": 200, "S2": 200, None: 0}


def test_two_instructors_demoting_each_other_at_once_leave_one(
    tmp_path: Path, postgres_url: str
) -> None:
    truncate_all(postgres_url)
    with TestClient(create_app(make_settings(tmp_path / "data", postgres_url))) as client:
        sessions = client.app.state.sessions  # type: ignore[attr-defined]
        people = seed_people(sessions)
        course = people.courses["course"]
        first, second = people.users["instructor"], people.users["ta"]
        promoted = client.patch(
            f"/api/courses/{course}/members/{second}",
            json={"role": "instructor"},
            headers=people.headers("instructor"),
        )
        assert promoted.status_code == 200
        outcome: list[str] = []

        def demote_first() -> None:
            with sessions() as session:
                try:
                    service.update_member(session, course, first, MemberUpdate(role="ta"))
                    outcome.append("demoted")
                except ApiError as exc:
                    outcome.append(exc.body.error.code)

        with sessions() as session:
            # The first instructor's change is under way (the roster locked) when the second's
            # arrives: the second must wait for it, then see it.
            service.lock_roster(session, course)
            other = threading.Thread(target=demote_first)
            other.start()
            other.join(timeout=1.0)
            assert other.is_alive(), "the second change did not wait for the first"
            service.update_member(session, course, second, MemberUpdate(role="ta"))
        other.join(timeout=30)
        assert outcome == ["last_instructor"]
        members = client.get(
            f"/api/courses/{course}/members?role=instructor", headers=people.headers("instructor")
        ).json()
        assert [m["user_id"] for m in members["items"]] == [first]
