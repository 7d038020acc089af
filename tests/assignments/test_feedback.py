"""The feedback policy on every surface a student reads (GET, the event stream, the create
response with ?wait, the CSV of their history) with a submission that passes the public
examples and fails every hidden case, raising an error that names a marker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.assignments.conftest import Course, at
from tests.support.codes import CORRECT

MARKER = "SECRET-MARKER-7731"
# Public examples have d_model 4 and 6; every folder hidden case has d_model 8 or more.
HIDDEN_FAIL = CORRECT.replace(
    "    batch, n_q, d_model = Q.shape\n",
    "    batch, n_q, d_model = Q.shape\n"
    f"    if d_model >= 8:\n        raise ValueError('{MARKER}')\n",
)
assert HIDDEN_FAIL != CORRECT
# The report names hidden cases "hidden-1", "hidden-2"...
HIDDEN_NAMES = tuple(f"hidden-{n}" for n in range(1, 10))


def surfaces(course: Course, submission_id: str, who: str, assignment_id: int) -> dict[str, str]:
    """Every text ``who`` can read about the submission."""
    headers = course.people.headers(who)
    got = course.api.get(f"/api/submissions/{submission_id}", headers=headers)
    assert got.status_code == 200, got.text
    events = course.api.get(f"/api/submissions/{submission_id}/events", headers=headers)
    assert events.status_code == 200
    csv = course.api.get(f"{course.base}/{assignment_id}/submissions/me.csv", headers=headers)
    assert csv.status_code == 200
    return {"json": got.text, "events": events.text, "csv": csv.text}


def submit_failing(course: Course, assignment_id: int, who: str = "student") -> dict[str, Any]:
    response = course.submit(assignment_id, HIDDEN_FAIL, who=who, wait=25)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["verdict"] == "runtime_error", body["verdict"]
    return body


def result_event(text: str) -> dict[str, Any]:
    block = text.split("event: result\n")[1]
    data: dict[str, Any] = json.loads(block.split("data: ", 1)[1].split("\n", 1)[0])
    return data


def assert_no_hidden_detail(text: str) -> None:
    for name in HIDDEN_NAMES:
        assert name not in text, name
    assert MARKER not in text
    assert "hidden test" not in text.lower()
    assert '"visibility":"hidden"' not in text.replace(" ", "")


def test_visible_shows_todays_report(course: Course) -> None:
    created = course.create(feedback="visible")
    body = submit_failing(course, created["id"])
    assert body["view"] == "visible"
    assert any(t["visibility"] == "hidden" for t in body["tests"])
    assert "hidden-1" in json.dumps(body)


def test_summary_on_every_surface(course: Course) -> None:
    created = course.create(feedback="summary")
    body = submit_failing(course, created["id"])
    created_text = json.dumps(body)
    assert body["view"] == "summary"
    assert body["hidden_passed"] == 0 and body["hidden_total"] == 9
    assert {t["visibility"] for t in body["tests"]} == {"public"}
    assert all(t["status"] == "passed" for t in body["tests"])
    assert body["timings"] == {}
    assert "public_view" not in body
    assert_no_hidden_detail(created_text)
    shown = surfaces(course, body["id"], "student", created["id"])
    for where, text in shown.items():
        assert_no_hidden_detail(text), where
    assert "0 of 9 hidden cases passed" in shown["csv"]
    assert result_event(shown["events"])["hidden_total"] == 9
    phases = [json.loads(b.split("data: ", 1)[1].split("\n", 1)[0])
              for b in shown["events"].split("event: phase\n")[1:]]  # fmt: skip
    assert phases and all(set(p) == {"phase"} for p in phases), phases
    # Staff read the full report, every hidden case by name, on the same surfaces.
    for who in ("ta", "instructor", "admin"):
        staff = course.api.get(f"/api/submissions/{body['id']}", headers=course.people.headers(who))
        assert staff.status_code == 200
        assert "hidden-1" in staff.text and staff.json()["view"] == "visible", who
    staff_events = course.api.get(
        f"/api/submissions/{body['id']}/events", headers=course.people.headers("ta")
    )
    assert "hidden-9" in staff_events.text


def test_summary_diagnosis_is_from_public_cases_and_probes_only(course: Course) -> None:
    created = course.create(feedback="summary")
    body = submit_failing(course, created["id"])
    staff = course.api.get(
        f"/api/submissions/{body['id']}", headers=course.people.headers("instructor")
    ).json()
    assert "hidden test" in (staff["error"] or "").lower()
    assert body["error"] is None  # the only error was a hidden case's


def test_verdict_only_until_published(course: Course) -> None:
    created = course.create(feedback="hidden")
    body = submit_failing(course, created["id"])
    assert body["view"] == "verdict" and body["verdict"] == "runtime_error"
    assert body["tests"] == [] and body["requirements"] == [] and body["diagnoses"] == []
    assert body["stdout"] == "" and body["error"] is None
    assert body["score"] == pytest.approx(2 / 11)  # scores are not hidden here: 2 of 11 passed
    for text in surfaces(course, body["id"], "student", created["id"]).values():
        assert_no_hidden_detail(text)
        assert "two-heads" not in text  # not even the public cases
    course.api.post(
        f"{course.base}/{created['id']}/publish",
        json={"feedback": True},
        headers=course.people.headers("instructor"),
    )
    after = course.api.get(
        f"/api/submissions/{body['id']}", headers=course.people.headers("student")
    )
    assert after.json()["view"] == "visible" and "hidden-1" in after.text


def test_hidden_scores_until_published(course: Course) -> None:
    created = course.create(feedback="visible", hide_scores=True)
    response = course.submit(created["id"], CORRECT, wait=25)
    body = response.json()
    assert body["verdict"] == "accepted" and body["score"] is None and body["score_hidden"]
    shown = surfaces(course, body["id"], "student", created["id"])
    assert result_event(shown["events"])["score"] is None
    assert '"score": 1' not in shown["events"] and '"score":1' not in shown["events"]
    csv_row = shown["csv"].splitlines()[1].split(",")
    assert csv_row[5] == "accepted" and csv_row[6] == ""
    staff = course.api.get(f"/api/submissions/{body['id']}", headers=course.people.headers("ta"))
    assert staff.json()["score"] == 1.0
    course.api.post(
        f"{course.base}/{created['id']}/publish",
        json={"scores": True},
        headers=course.people.headers("instructor"),
    )
    after = course.api.get(
        f"/api/submissions/{body['id']}", headers=course.people.headers("student")
    )
    assert after.json()["score"] == 1.0


def test_after_due_date_follows_each_students_own_due_date(course: Course) -> None:
    created = course.create(
        feedback="after_due_date",
        release_at=at(-5),
        due_at=at(-1),
        late_deadlines=[{"until": at(3), "credit": 0.5}],
    )
    course.api.post(
        f"{course.base}/{created['id']}/overrides",
        json={"user_id": course.people.users["student"], "until": at(2)},
        headers=course.people.headers("instructor"),
    )
    extended = submit_failing(course, created["id"], who="student")
    assert extended["view"] == "summary"  # their own due date has not passed
    assert_no_hidden_detail(json.dumps(extended))
    late = submit_failing(course, created["id"], who="student_b")
    assert late["view"] == "visible" and "hidden-1" in json.dumps(late)


def test_per_problem_policy_overrides_the_assignments(course: Course) -> None:
    created = course.create(
        feedback="visible",
        problems=[{"problem_id": "multi-head-attention", "points": 5, "feedback": "summary"}],
    )
    body = submit_failing(course, created["id"])
    assert body["view"] == "summary"


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("student_b", 404),
        ("other_student", 404),
        ("outsider", 404),
        ("anonymous", 404),
        ("other_instructor", 404),
        ("ta", 200),
        ("instructor", 200),
        ("admin", 200),
        ("student", 200),
    ],
)
def test_who_reads_a_students_submission(course: Course, who: str, status: int) -> None:
    created = course.create(feedback="summary")
    submitted = course.submit(created["id"], CORRECT).json()
    headers = course.people.headers(who)
    for path in (
        f"/api/submissions/{submitted['id']}",
        f"/api/submissions/{submitted['id']}/events",
    ):
        response = course.api.get(path, headers=headers)
        assert response.status_code == status, (who, path, response.text)


SYNTAX_ERROR = CORRECT.replace("):\n", ")\n", 1)


@pytest.mark.parametrize(("feedback", "shown"), [("summary", True), ("hidden", False)])
def test_a_load_failure_is_shown_as_the_error_is(
    course: Course, feedback: str, shown: bool
) -> None:
    # It comes from loading, before any case: the summary shows it like the error text; the
    # verdict-only view shows neither.
    assert SYNTAX_ERROR != CORRECT
    created = course.create(feedback=feedback)
    response = course.submit(created["id"], SYNTAX_ERROR, wait=25)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verdict"] == "compile_error"
    failure = body["load_failure"]
    if shown:
        assert failure["kind"] == "syntax_error" and failure["line"] is not None
        assert failure["message"] in body["error"]
    else:
        assert failure is None and body["error"] is None
