"""Roster CSV uploads: all or nothing, row errors named, the same file twice changes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import User
from app.courses.models import Membership
from app.main import create_app
from tests.courses.conftest import snapshot
from tests.instructors.conftest import make_settings
from tests.support.people import People, seed_people

MAX_ROWS = 50  # tests/courses/conftest.py's setting


def upload(
    client: TestClient, people: People, text: str | bytes, who: str = "instructor", **kw: Any
) -> Any:
    data = text.encode() if isinstance(text, str) else text
    url = f"/api/courses/{people.courses['course']}/roster"
    if kw.get("multipart"):
        return client.post(
            url, files={"file": ("roster.csv", data, "text/csv")}, headers=people.headers(who)
        )
    headers = {**people.headers(who), "Content-Type": kw.get("content_type", "text/csv")}
    return client.post(url, content=data, headers=headers)


def roster(client: TestClient, people: People) -> dict[str, tuple[str, str | None, str]]:
    page = client.get(
        f"/api/courses/{people.courses['course']}/members?limit=500",
        headers=people.headers("instructor"),
    ).json()
    return {m["email"]: (m["role"], m["section"], m["status"]) for m in page["items"]}


GOOD = """email,name,section
new1@example.edu,New One,A
new2@example.edu,New Two,B
student@example.edu,Student,C
student_b@example.edu,Student B,B
other_student@example.edu,Someone Else,A
"""


def test_an_upload_enrols_creates_and_updates_and_twice_changes_nothing(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    first = upload(client, people, GOOD)
    assert first.status_code == 200, first.text
    # new1, new2: new accounts; other_student: an account, new here; student: moved to C.
    assert first.json() == {
        "created": 2,
        "enrolled": 3,
        "updated": 1,
        "unchanged": 1,
        "inactive": 0,
        # Each person enrolled now is mailed (the mailer logs here).
        "invited": 3,
    }
    members = roster(client, people)
    assert members["new1@example.edu"] == ("student", "A", "active")
    assert members["student@example.edu"] == ("student", "C", "active")
    assert members["other_student@example.edu"] == ("student", "A", "active")
    with sessions() as session:
        other = session.get(User, people.users["other_student"])
        assert other is not None and other.name == "Other Student"  # the file names no one

    before = snapshot(sessions)
    again = upload(client, people, GOOD, multipart=True)
    assert again.json() == {
        "created": 0,
        "enrolled": 0,
        "updated": 0,
        "unchanged": 5,
        "inactive": 0,
        "invited": 0,
    }
    assert snapshot(sessions) == before


def test_headers_any_case_a_bom_roles_and_files_without_a_section_column(
    client: TestClient, people: People
) -> None:
    text = (
        "\ufeffEMAIL , Name,Role\r\nNew.TA@Example.edu,New TA,TA\r\nstudent@example.edu,S,\r\n\r\n"
    )
    response = upload(client, people, text.encode("utf-8"))
    assert response.status_code == 200, response.text
    assert response.json()["enrolled"] == 1
    assert response.json()["unchanged"] == 1  # no section column: sections are left alone
    members = roster(client, people)
    assert members["new.ta@example.edu"] == ("ta", None, "active")
    assert members["student@example.edu"] == ("student", "A", "active")


def test_blocked_and_removed_members_are_left_as_they_are(
    client: TestClient, people: People
) -> None:
    course = people.courses["course"]
    client.delete(
        f"/api/courses/{course}/members/{people.users['student']}",
        headers=people.headers("instructor"),
    )
    response = upload(client, people, "email,name,section\nstudent@example.edu,S,Q\n")
    assert response.json()["inactive"] == 1
    assert roster(client, people)["student@example.edu"] == ("student", "A", "removed")


def test_three_hundred_students_in_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path / "data")
    with TestClient(create_app(settings)) as client:
        people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
        lines = ["email,name,section"] + [
            f"s{i:03d}@example.edu,Student {i},S{i % 12}" for i in range(300)
        ]
        started = time.perf_counter()
        response = upload(client, people, "\n".join(lines))
        seconds = time.perf_counter() - started
        assert response.status_code == 200, response.text
        assert response.json()["created"] == 300
        started = time.perf_counter()
        again = upload(client, people, "\n".join(lines))
        again_seconds = time.perf_counter() - started
        assert again.json()["unchanged"] == 300
    with capsys.disabled():
        print(f"\nroster CSV, 300 new students: {seconds:.2f} s; again: {again_seconds:.2f} s")
    assert seconds < 10


# -- refusals: one app for all of them, since none may change anything ---------------------------


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, People]]:
    settings = make_settings(
        tmp_path_factory.mktemp("roster") / "data", roster_max_rows=MAX_ROWS, roster_max_bytes=4096
    )
    with TestClient(create_app(settings)) as client:
        people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
        yield client, people


def _rows(n: int) -> str:
    return "email,name\n" + "".join(f"p{i}@example.edu,P {i}\n" for i in range(n))


# (test id, body, extra, status, code, expected row errors [(line, column)] or None)
Rows = list[tuple[int, str | None]] | None
BAD: list[tuple[str, bytes | str, dict[str, Any], int, str, Rows]] = [
    (
        "bad email among good rows",
        "email,name\nok1@example.edu,A\nnot-an-email,B\nok2@example.edu,C\n",
        {},
        422,
        "invalid_roster_rows",
        [(3, "email")],
    ),
    (
        "several bad rows",
        "email,name,section,role\na@x.edu,,A,student\nb@x.edu,B,A,boss\nc@x.edu,C,"
        + "s" * 65
        + ",\nd@x.edu,D\n",
        {},
        422,
        "invalid_roster_rows",
        [(2, "name"), (3, "role"), (4, "section"), (5, None)],
    ),
    (
        "duplicate rows",
        "email,name\nsame@example.edu,A\nother@example.edu,B\nSAME@example.edu ,A\n",
        {},
        422,
        "invalid_roster_rows",
        [(4, "email")],
    ),
    (
        "missing column",
        "email,section\na@example.edu,A\n",
        {},
        422,
        "invalid_roster",
        None,
    ),
    (
        "extra column",
        "email,name,student_id\na@example.edu,A,123\n",
        {},
        422,
        "invalid_roster",
        None,
    ),
    ("repeated column", "email,name,email\na@x.edu,A,b@x.edu\n", {}, 422, "invalid_roster", None),
    ("no header row", "a@example.edu,A\n", {}, 422, "invalid_roster", None),
    ("empty file", "", {}, 422, "invalid_roster", None),
    ("header only", "email,name\n", {}, 422, "invalid_roster", None),
    (
        "wrong encoding",
        "email,name\nzoe@example.edu,Zoë Légère\n".encode("latin-1"),
        {},
        422,
        "invalid_roster",
        None,
    ),
    ("too many rows", _rows(MAX_ROWS + 1), {}, 422, "invalid_roster", None),
    ("not CSV", 'email,name\n"a@example.edu,A\n', {}, 422, "invalid_roster", None),
    (
        "demotes the last instructor",
        "email,name,role\ninstructor@example.edu,I,ta\n",
        {},
        422,
        "invalid_roster_rows",
        [(2, "role")],
    ),
    ("over the byte cap", _rows(200), {}, 413, "roster_too_large", None),
    ("over the cap, multipart", _rows(200), {"multipart": True}, 413, "roster_too_large", None),
    ("JSON", '{"email": "a@x.edu"}', {"content_type": "application/json"}, 415, "", None),
    ("a TA giving staff roles", "email,name,role\nt@x.edu,T,ta\n", {"who": "ta"}, 403, "", None),
    ("a TA enrolling students", "email,name\nt@x.edu,T\n", {"who": "ta"}, 403, "", None),
    (
        "a student uploading",
        "email,name\nt@x.edu,T\n",
        {"who": "student"},
        403,
        "forbidden",
        None,
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_a_bad_file_is_refused_whole_and_changes_nothing(
    shared: tuple[TestClient, People], case: Any
) -> None:
    client, people = shared
    _, body, extra, status, code, rows = case
    sessions = client.app.state.sessions  # type: ignore[attr-defined]
    before = snapshot(sessions)
    options = {k: v for k, v in extra.items() if k != "who"}
    response = upload(client, people, body, who=extra.get("who", "instructor"), **options)
    assert response.status_code == status, response.text
    data = response.json()
    assert set(data) <= {"error", "rows"}
    if code:
        assert data["error"]["code"] == code
    assert data["error"]["message"]
    if rows is not None:
        assert [(r["line"], r["column"]) for r in data["rows"]] == rows
        assert all(r["message"] for r in data["rows"])
    assert snapshot(sessions) == before
    with sessions() as session:  # nobody half-imported
        assert session.scalars(select(Membership).where(Membership.role == "x")).all() == []
