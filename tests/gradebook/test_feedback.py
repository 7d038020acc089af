"""Comments (the student reads them) and staff notes (the student never does), on a problem and
on one submission; sanitized markdown; size limits; the adjustment's reason kept from the
student; and the course's texts per diagnosis, which follow each student's latest attempt."""

from __future__ import annotations

import csv
import io
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.gradebook.models import DiagnosisHint
from app.gradebook.routes import FEEDBACK_BODY_BYTES
from app.gradebook.schemas import FEEDBACK_MAX_CHARS
from app.grading.schemas import GradeReport, PublicView
from app.submissions.models import Submission
from tests.gradebook.factories import MHA, SOFTMAX, T0, add_attempt, make_assignment
from tests.support.people import People

HOUR = timedelta(hours=1)
NOTE = "Staff only: probably copied from the forum"
COMMENT = "**Good** start: check the *scale* of the scores."


def base(people: People, a: int) -> str:
    return f"/api/courses/{people.courses['course']}/assignments/{a}"


def put(api: TestClient, people: People, a: int, who: str = "ta", **body: object):  # type: ignore[no-untyped-def]
    return api.post(f"{base(people, a)}/feedback", json=body, headers=people.headers(who))


def download(api: TestClient, people: People, a: int, name: str) -> str:
    r = api.get(f"{base(people, a)}/{name}", headers=people.headers("ta"))
    assert r.status_code == 200
    return r.text


@pytest.fixture
def graded(sessions: sessionmaker[Session], people: People) -> tuple[int, str]:
    a = make_assignment(sessions, people.courses["course"])
    sid = add_attempt(sessions, a, people.users["student"], MHA, 1, T0 - HOUR, 0.0)
    add_attempt(sessions, a, people.users["student_b"], MHA, 1, T0 - HOUR, 1.0)
    return a, sid


def test_comment_reaches_the_student_and_the_note_never_does(
    api: TestClient, people: People, graded: tuple[int, str]
) -> None:
    a, sid = graded
    s = people.users["student"]
    for kind, text, submission in (
        ("comment", COMMENT, None),
        ("note", NOTE, None),
        ("comment", "On this attempt: the mask is flipped.", sid),
        ("note", "Attempt note, staff only", sid),
    ):
        r = put(api, people, a, user_id=s, problem_id=MHA, submission_id=submission, kind=kind,
                body=text)  # fmt: skip
        assert r.status_code == 201, r.text
        assert r.json()["created_by_name"] == "Ta"

    mine = api.get(f"{base(people, a)}/grades/me", headers=people.headers("student"))
    assert mine.status_code == 200
    assert NOTE not in mine.text and "staff only" not in mine.text
    mha = mine.json()["problems"][0]
    assert mha["comment"]["body"] == COMMENT
    assert mha["comment"]["html"].startswith("<p><strong>Good</strong> start")
    assert mha["comment"]["created_by_name"] == "Ta" and mha["comment"]["created_at"]
    assert [c["body"] for c in mine.json()["submission_comments"]] == [
        "On this attempt: the mask is flipped."
    ]
    # Another student reads nothing of it.
    other = api.get(f"{base(people, a)}/grades/me", headers=people.headers("student_b"))
    assert "mask" not in other.text and "Good" not in other.text

    # Staff read both fields, side by side, in the record, the table and the CSVs.
    record = api.get(f"{base(people, a)}/students/{s}", headers=people.headers("ta")).json()
    assert (record["cells"][0]["comment"]["body"], record["cells"][0]["note"]["body"]) == (
        COMMENT, NOTE)  # fmt: skip
    sub = next(x for x in record["submissions"] if x["id"] == sid)
    assert sub["note"]["body"] == "Attempt note, staff only"
    book = api.get(f"{base(people, a)}/gradebook", headers=people.headers("ta")).json()
    row = next(r for r in book["students"] if r["user_id"] == s)
    assert row["cells"][0]["note"]["body"] == NOTE and row["cells"][1]["note"] is None
    table = list(csv.reader(io.StringIO(download(api, people, a, "gradebook.csv"))))
    header, line = table[0], next(r for r in table if r[1] == "student@example.edu")
    assert line[header.index(f"comment ({MHA})")] == COMMENT
    assert line[header.index(f"staff note ({MHA})")] == NOTE
    attempts = list(csv.DictReader(io.StringIO(download(api, people, a, "attempts.csv"))))
    mine_row = next(r for r in attempts if r["submission_id"] == sid)
    assert mine_row["staff_note"] == "Attempt note, staff only"

    # An empty body clears the field; the other field stays.
    assert (
        put(api, people, a, user_id=s, problem_id=MHA, kind="comment", body=" ").status_code == 201
    )
    mha = api.get(f"{base(people, a)}/grades/me", headers=people.headers("student")).json()
    assert mha["problems"][0]["comment"] is None
    record = api.get(f"{base(people, a)}/students/{s}", headers=people.headers("ta")).json()
    assert record["cells"][0]["note"]["body"] == NOTE


def test_comment_markdown_is_sanitized(
    api: TestClient, people: People, graded: tuple[int, str]
) -> None:
    a, _ = graded
    evil = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
        "![tracker](https://evil.example/pixel.png) ![ok](/static/figure.png)\n\n"
        "[click](javascript:alert(3)) [proto](//evil.example/x) [docs](https://docs.example/)"
    )
    r = put(api, people, a, user_id=people.users["student"], problem_id=MHA, kind="comment",
            body=evil)  # fmt: skip
    tags = Tags()
    tags.feed(r.json()["html"])
    # Raw HTML stays text: no script, no element with an event handler.
    assert "script" not in {t for t, _ in tags.found}
    assert not [a for _, attrs in tags.found for a, _ in attrs if a.startswith("on")]
    # Images from this site only; links to http(s) only, never scripts nor another host
    # through a protocol-relative address.
    assert [dict(a)["src"] for t, a in tags.found if t == "img"] == ["/static/figure.png"]
    assert [dict(a)["href"] for t, a in tags.found if t == "a"] == ["#", "https://docs.example/"]
    assert {dict(a)["rel"] for t, a in tags.found if t == "a"} == {"nofollow noopener noreferrer"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def test_limits_and_targets(
    api: TestClient, people: People, graded: tuple[int, str], sessions: sessionmaker[Session]
) -> None:
    a, sid = graded
    s = people.users["student"]
    long = put(api, people, a, user_id=s, problem_id=MHA, kind="comment",
               body="x" * (FEEDBACK_MAX_CHARS + 1))  # fmt: skip
    assert long.status_code == 422
    headers = {**people.headers("ta"), "content-type": "application/json"}
    huge = api.post(
        f"{base(people, a)}/feedback", content=b"{" + b" " * FEEDBACK_BODY_BYTES, headers=headers
    )
    assert huge.status_code == 413
    # A submission of another student, or of another problem, is not a target here.
    b = people.users["student_b"]
    assert put(api, people, a, user_id=b, problem_id=MHA, submission_id=sid, kind="note",
               body="x").status_code == 404  # fmt: skip
    assert put(api, people, a, user_id=s, problem_id=SOFTMAX, submission_id=sid, kind="note",
               body="x").status_code == 404  # fmt: skip
    assert put(api, people, a, user_id=s, problem_id="nope", kind="note",
               body="x").status_code == 404  # fmt: skip
    # A student writes nothing, not even on themselves.
    assert put(api, people, a, "student", user_id=s, problem_id=MHA, kind="comment",
               body="x").status_code == 403  # fmt: skip


def test_the_adjustment_reason_stays_with_staff(
    api: TestClient, people: People, graded: tuple[int, str]
) -> None:
    a, _ = graded
    s = people.users["student"]
    reason = "suspected copy, see the note"
    r = api.post(f"{base(people, a)}/adjustments", headers=people.headers("ta"),
                 json={"user_id": s, "problem_id": MHA, "score": 4, "comment": reason})  # fmt: skip
    assert r.status_code == 201, r.text
    mine = api.get(f"{base(people, a)}/grades/me", headers=people.headers("student"))
    assert reason not in mine.text
    assert mine.json()["problems"][0]["rule"] == "adjusted by staff"
    assert mine.json()["problems"][0]["points"] == 4
    staff = api.get(f"{base(people, a)}/gradebook", headers=people.headers("ta")).json()
    cell = next(r for r in staff["students"] if r["user_id"] == s)["cells"][0]
    assert cell["rule"] == f"adjusted: {reason}"


def test_a_hint_follows_the_latest_attempt(
    api: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    a = make_assignment(sessions, people.courses["course"])
    s, b = people.users["student"], people.users["student_b"]
    add_attempt(sessions, a, s, MHA, 1, T0 - 3 * HOUR, 0.0, codes=["heads-split"])
    add_attempt(sessions, a, b, MHA, 1, T0 - 3 * HOUR, 0.0, codes=["no-scale"])
    hint = {
        "problem_id": MHA,
        "code": "heads-split",
        "body": "Split as `(h, d_k)`, not `(d_k, h)`.",
    }
    assert api.put(f"{base(people, a)}/hints", json=hint,
                   headers=people.headers("ta")).status_code == 403  # fmt: skip
    r = api.put(f"{base(people, a)}/hints", json=hint, headers=people.headers("instructor"))
    assert r.status_code == 200, r.text
    assert "<code>(h, d_k)</code>" in r.json()["html"]

    def hints_of(who: str) -> list[str]:
        body = api.get(f"{base(people, a)}/grades/me", headers=people.headers(who)).json()
        return [h["code"] for h in body["problems"][0]["hints"]]

    assert hints_of("student") == ["heads-split"]
    assert hints_of("student_b") == []
    listed = api.get(f"{base(people, a)}/hints?reaches=true", headers=people.headers("ta"))
    listed = listed.json()["hints"]
    assert [(h["code"], h["reaches"]) for h in listed] == [("heads-split", 1)]
    # student_b makes the same mistake later: the hint reaches them too; student fixes it.
    add_attempt(sessions, a, b, MHA, 2, T0 - 2 * HOUR, 0.0, codes=["heads-split", "no-scale"])
    add_attempt(sessions, a, s, MHA, 2, T0 - 2 * HOUR, 1.0)
    assert hints_of("student_b") == ["heads-split"]
    assert hints_of("student") == []
    # Withdrawn: nobody reads it.
    api.put(f"{base(people, a)}/hints", json={**hint, "body": ""},
            headers=people.headers("instructor"))  # fmt: skip
    assert hints_of("student_b") == []
    # Another course's assignment on the same problem does not carry this course's hint.
    other = make_assignment(sessions, people.courses["other_course"])
    add_attempt(sessions, other, people.users["other_student"], MHA, 1, T0, 0.0,
                codes=["heads-split"])  # fmt: skip
    api.put(f"{base(people, a)}/hints", json=hint, headers=people.headers("instructor"))
    theirs = api.get(
        f"/api/courses/{people.courses['other_course']}/assignments/{other}/grades/me",
        headers=people.headers("other_student"),
    ).json()
    assert theirs["problems"][0]["hints"] == []


def test_concurrent_first_hints_all_succeed(
    api: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    """Eight instructors' first saves of one hint at once: each answered, one row in force."""
    a = make_assignment(sessions, people.courses["course"])

    def save(n: int) -> int:
        body = {"problem_id": MHA, "code": "race", "body": f"text {n}"}
        r = api.put(f"{base(people, a)}/hints", json=body, headers=people.headers("instructor"))
        return r.status_code

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(save, range(8))) == [200] * 8
    with sessions() as session:
        rows = session.scalars(select(DiagnosisHint).where(DiagnosisHint.code == "race")).all()
    assert len(rows) == 1 and rows[0].body.startswith("text ")


def test_a_hint_tells_nothing_the_policy_hides(
    api: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    """A hint names its diagnosis: under "summary" only a diagnosis of the report's public view
    (public cases and probes) brings it, under "hidden" none does."""
    for feedback in ("summary", "hidden"):
        a = make_assignment(sessions, people.courses["course"], feedback=feedback,
                            title=f"Under {feedback}")  # fmt: skip
        sid = add_attempt(sessions, a, people.users["student"], MHA, 1, T0, 0.0,
                          codes=["from-hidden", "from-public"])  # fmt: skip
        with sessions() as session:
            row = session.get(Submission, sid)
            assert row is not None and row.report is not None
            report = GradeReport.model_validate_json(row.report)
            public = [d for d in report.diagnoses if d.code == "from-public"]
            report.public_view = PublicView(requirements=[], diagnoses=public)
            row.report = report.model_dump_json()
            session.commit()
        for code in ("from-hidden", "from-public"):
            hint = {"problem_id": MHA, "code": code, "body": f"About {code}"}
            r = api.put(f"{base(people, a)}/hints", headers=people.headers("instructor"), json=hint)
            assert r.status_code == 200
        mine = api.get(f"{base(people, a)}/grades/me", headers=people.headers("student"))
        assert "from-hidden" not in mine.text
        shown = [h["code"] for h in mine.json()["problems"][0]["hints"]]
        assert shown == (["from-public"] if feedback == "summary" else [])
