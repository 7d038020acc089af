"""Hidden cases owned by who uses them: a course's own cases grade only that course's
assignments, its staff alone see them, and the catalog's cases are the administrators'.

Two courses share the multi-head attention problem (tests/support/people.py): ``course`` (A:
``instructor``, ``ta``, ``student``) and ``other_course`` (B: ``other_instructor``,
``other_student``). ``instructor`` is also a deployment instructor, not an admin.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.assignments.cases import submission_cases
from app.courses.models import Course
from app.main import create_app
from app.problems.cases import TestCase as Case
from app.submissions.models import Submission
from app.testcases.service import CaseConflict, CaseMeta, CaseService
from tests.assignments.conftest import assignment_body
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    as_json,
    case_inputs,
    make_settings,
)
from tests.support.codes import CORRECT
from tests.support.people import People, seed_people

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, People]]:
    data: Path = tmp_path_factory.mktemp("course-cases") / "data"
    settings = make_settings(data, workers=2, cpu_seconds=2.0, wall_seconds=5.0)
    with TestClient(create_app(settings)) as api:
        yield api, seed_people(api.app.state.sessions)  # type: ignore[attr-defined]


def cases_of(people: People, course: str) -> str:
    return f"/api/courses/{people.courses[course]}/problems/{PROBLEM}/test-cases"


def add(api: TestClient, url: str, who: str, people: People, name: str, seed: int = 0) -> Any:
    body = {"name": name, "inputs": as_json(case_inputs(seed=seed))}
    return api.post(url, json=body, headers=people.headers(who))


def create_assignment(api: TestClient, people: People, course: str, who: str, **extra: Any) -> int:
    # Full feedback unless a test says otherwise: the module's people are shared, and a student's
    # strictest policy follows them, so one summary assignment would cut every later test's view.
    extra.setdefault("feedback", "visible")
    response = api.post(
        f"/api/courses/{people.courses[course]}/assignments",
        json=assignment_body(**extra),
        headers=people.headers(who),
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def names(listing: Any) -> set[str]:
    return {c["name"] for c in listing.json()["cases"]}


# -- who owns the catalog -----------------------------------------------------------------------


def test_a_deployment_instructor_no_longer_changes_the_catalog(world) -> None:
    api, people = world
    assert people.tokens["instructor"]  # a deployment instructor (may create courses)
    refused = add(api, CASES, "instructor", people, "by-an-instructor")
    assert refused.status_code == 403, refused.text
    assert "by-an-instructor" not in names(api.get(CASES, headers=people.headers("admin")))
    made = add(api, CASES, "admin", people, "by-the-admin")
    assert made.status_code == 201, made.text
    case_id = made.json()["id"]
    assert made.json()["course_id"] is None
    gone = api.delete(f"{CASES}/{case_id}", headers=people.headers("instructor"))
    assert gone.status_code == 403, gone.text
    assert api.get(f"{CASES}/{case_id}", headers=people.headers("instructor")).status_code == 200
    assert api.delete(f"{CASES}/{case_id}", headers=people.headers("admin")).status_code == 200


# -- a course's cases are its staff's only ------------------------------------------------------


def test_another_courses_staff_cannot_list_read_delete_or_add(world) -> None:
    api, people = world
    a_url, b_url = cases_of(people, "course"), cases_of(people, "other_course")
    made = add(api, a_url, "instructor", people, "a-secret", seed=11)
    assert made.status_code == 201, made.text
    case_id = made.json()["id"]
    assert made.json()["course_id"] == people.courses["course"]
    assert made.headers["Location"] == f"{a_url}/{case_id}"

    # A's staff: the TA reads, only the instructor changes.
    assert "a-secret" in names(api.get(a_url, headers=people.headers("ta")))
    detail = api.get(f"{a_url}/{case_id}", headers=people.headers("ta"))
    assert detail.status_code == 200 and len(detail.json()["expected"]) == 2
    assert add(api, a_url, "ta", people, "by-the-ta").status_code == 403
    assert api.delete(f"{a_url}/{case_id}", headers=people.headers("ta")).status_code == 403
    # A's students see none of it.
    assert api.get(a_url, headers=people.headers("student")).status_code == 403
    assert api.get(f"{a_url}/{case_id}", headers=people.headers("student")).status_code == 403

    # B's instructor: A's routes do not exist for them, and B's routes do not hold A's case.
    other = people.headers("other_instructor")
    for response in (
        api.get(a_url, headers=other),
        api.get(f"{a_url}/{case_id}", headers=other),
        api.delete(f"{a_url}/{case_id}", headers=other),
        add(api, a_url, "other_instructor", people, "planted"),
        api.get(f"{b_url}/{case_id}", headers=other),
        api.delete(f"{b_url}/{case_id}", headers=other),
    ):
        assert response.status_code == 404, response.text
    assert "a-secret" not in names(api.get(b_url, headers=other))
    # Nor does the catalog's route, for anyone: a course's case is not the catalog's.
    admin = people.headers("admin")
    assert "a-secret" not in names(api.get(CASES, headers=admin))
    assert api.get(f"{CASES}/{case_id}", headers=admin).status_code == 404
    assert api.delete(f"{CASES}/{case_id}", headers=admin).status_code == 404
    # Still there for A, and B may use the same name (names do not leak across courses).
    assert api.get(f"{a_url}/{case_id}", headers=people.headers("instructor")).status_code == 200
    assert add(api, b_url, "other_instructor", people, "a-secret", seed=12).status_code == 201
    # A catalog name runs alongside every course's cases: taken for a course too, and a name
    # a course uses is refused to the catalog (the run needs unique names).
    assert add(api, CASES, "admin", people, "catalog-name", seed=13).status_code == 201
    clash = add(api, a_url, "instructor", people, "catalog-name", seed=14)
    assert clash.status_code == 409, clash.text
    assert add(api, CASES, "admin", people, "a-secret", seed=15).status_code == 409
    removed = api.delete(f"{a_url}/{case_id}", headers=people.headers("instructor"))
    assert removed.status_code == 200, removed.text
    assert api.get(f"{a_url}/{case_id}", headers=people.headers("instructor")).status_code == 404


def test_a_name_is_taken_once_across_the_catalog_and_a_course_under_races(
    make_client: MakeClient, database_url: str | None
) -> None:
    """Concurrent adds of one name to the catalog and to a course: no unique index spans the
    two, so the service checks after the version bump's lock; exactly one wins."""
    api = make_client(database_url)
    state = api.app.state  # type: ignore[attr-defined]
    with state.sessions() as session:
        course = Course(title="Racing")
        session.add(course)
        session.commit()
        course_id = course.id
    service = CaseService(state.settings, state.sessions)
    problem = state.problems[PROBLEM]
    outcomes: list[str] = []

    def add(n: int) -> None:
        scope = None if n % 2 else course_id
        try:
            service.add(problem, CaseMeta("same", "hidden", 1.0), case_inputs(n), course_id=scope)
            outcomes.append("added")
        except CaseConflict:
            outcomes.append("conflict")
        except BaseException as exc:  # collected: a thread's failure must fail the test
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["added"] + ["conflict"] * 7, outcomes


def test_a_course_case_is_validated_like_the_catalogs(world) -> None:
    api, people = world
    bad = as_json(case_inputs(d_model=6, num_heads=4))
    response = api.post(
        cases_of(people, "course"),
        json={"name": "bad-heads", "inputs": bad},
        headers=people.headers("instructor"),
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "inputs.num_heads"
    too_big = api.post(
        cases_of(people, "course"),
        content=b"{" + b" " * (api.app.state.settings.case_max_upload_bytes + 1) + b"}",  # type: ignore[attr-defined]
        headers={**people.headers("instructor"), "Content-Type": "application/json"},
    )
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "case_too_large"


# -- which cases grade which submission ----------------------------------------------------------


def _set(api: TestClient, people: People, mode: str = "submit", **row: Any) -> tuple[Case, ...]:
    state = api.app.state  # type: ignore[attr-defined]
    submission = Submission(id="x", problem_id=PROBLEM, mode=mode, **row)
    return submission_cases(state.settings, state.sessions, state.problems[PROBLEM], submission)[1]


def test_each_submission_runs_its_own_scope(world) -> None:
    """Practice: the catalog's; an assignment: the catalog's and its course's (public ones in
    "Run examples" too); per-student variants keep the course's cases."""
    api, people = world
    headers = people.headers("instructor")
    url = cases_of(people, "course")
    add(api, url, "instructor", people, "scope-hidden", seed=21)
    body = {"name": "scope-public", "visibility": "public", "inputs": as_json(case_inputs(22))}
    assert api.post(url, json=body, headers=headers).status_code == 201
    a = create_assignment(api, people, "course", "instructor")
    a_own = create_assignment(api, people, "course", "instructor", per_student_cases=True)
    b = create_assignment(api, people, "other_course", "other_instructor")
    student, other = people.users["student"], people.users["other_student"]

    ours = {"scope-hidden", "scope-public"}
    assert ours <= {c.name for c in _set(api, people, user_id=student, assignment_id=a)}
    assert not ours & {c.name for c in _set(api, people, user_id=other, assignment_id=b)}
    assert not ours & {c.name for c in _set(api, people, user_id=student, assignment_id=None)}
    examples = _set(api, people, user_id=student, assignment_id=a, mode="examples")
    assert "scope-public" in {c.name for c in examples}
    assert {c.visibility for c in examples} == {"public"}
    practice = _set(api, people, user_id=student, assignment_id=None, mode="examples")
    assert "scope-public" not in {c.name for c in practice}

    own = _set(api, people, user_id=student, assignment_id=a_own)
    assert ours <= {c.name for c in own}
    problem = api.app.state.problems[PROBLEM]  # type: ignore[attr-defined]
    folder = {c.name: np.asarray(c.inputs["Q"]) for c in problem.hidden}
    personal = [c for c in own if c.name in folder]
    assert personal and not any(np.array_equal(c.inputs["Q"], folder[c.name]) for c in personal)

    # The diagnosability report of the course's set counts its cases; the catalog's does not.
    catalog = api.get(f"/api/problems/{PROBLEM}/diagnosability", headers=headers).json()
    course = api.get(
        f"/api/courses/{people.courses['course']}/problems/{PROBLEM}/diagnosability",
        headers=people.headers("ta"),
    ).json()
    assert course["cases"] - catalog["cases"] == len(
        [c for c in api.get(url, headers=headers).json()["cases"]]
    )


def trap(case: dict[str, Any]) -> str:
    """Correct, except on one case (recognised by its Q's sum), where it returns zeros."""
    total = float(np.asarray(case["Q"]).sum())
    return CORRECT.replace(
        "    batch, n_q, d_model = Q.shape\n",
        "    batch, n_q, d_model = Q.shape\n"
        f"    if abs(float(Q.sum()) - {total!r}) < 1e-9:\n        return np.zeros_like(Q)\n",
    )


def _finished(api: TestClient, submission_id: str, headers: dict[str, str]) -> Any:
    """The submission once its regrade (queued when the regrade was answered) is done."""
    for _ in range(150):
        found = api.get(f"/api/submissions/{submission_id}", headers=headers).json()
        if found["status"] == "done":
            return found
        time.sleep(0.2)
    raise AssertionError(f"{submission_id} was not regraded: {found}")


@pytest.mark.slow
def test_a_course_b_upload_changes_neither_course_a_nor_practice(world) -> None:
    """Passes the catalog, fails B's case: failed in B (on a regrade too), passed in A and in
    practice."""
    api, people = world
    inputs = case_inputs(seed=31)
    code = trap(inputs)
    # Full feedback: practice is read in full below, which a summary assignment would cut.
    a = create_assignment(
        api, people, "course", "instructor", title="A's homework", feedback="visible"
    )
    b = create_assignment(
        api, people, "other_course", "other_instructor", title="B's homework", feedback="visible"
    )

    def submit(course: str, assignment: int, who: str) -> Any:
        url = f"/api/courses/{people.courses[course]}/assignments/{assignment}"
        made = api.post(
            f"{url}/problems/{PROBLEM}/submissions?wait=30",
            json={"code": code, "force": True},  # the same code again: spend the attempt
            headers=people.headers(who),
        )
        assert made.status_code == 200, made.text
        return made.json()

    before = submit("other_course", b, "other_student")
    assert before["verdict"] == "accepted", before

    body = {"name": "b-only", "inputs": as_json(inputs)}
    added = api.post(
        cases_of(people, "other_course"), json=body, headers=people.headers("other_instructor")
    )
    assert added.status_code == 201, added.text

    in_a = submit("course", a, "student")
    assert in_a["verdict"] == "accepted", in_a
    practice = api.post(f"/api/problems/{PROBLEM}/submissions?wait=30", json={"code": code})
    assert practice.status_code == 200 and practice.json()["verdict"] == "accepted"

    in_b = submit("other_course", b, "other_student")
    assert in_b["verdict"] == "wrong_answer", in_b
    # One more case than before (a student's report numbers hidden cases, never names them), and
    # that one alone failed.
    assert len(in_b["tests"]) == len(before["tests"]) + 1
    failed = [t["name"] for t in in_b["tests"] if t["status"] != "passed"]
    assert failed == [in_b["tests"][-1]["name"]], failed
    # B's earlier submission, regraded by B's instructor, now meets B's case too.
    regrade = api.post(
        f"/api/courses/{people.courses['other_course']}/submissions/regrade",
        params={"problem": PROBLEM, "user_id": people.users["other_student"]},
        headers=people.headers("other_instructor"),
    )
    assert regrade.status_code == 202, regrade.text
    assert regrade.json()["queued"] == 2
    again = _finished(api, before["id"], people.headers("other_instructor"))
    assert again["verdict"] == "wrong_answer"
    assert again["test_set_version"] == in_b["test_set_version"]
    # A's own regrade keeps A's verdict.
    regrade_a = api.post(
        f"/api/courses/{people.courses['course']}/submissions/regrade",
        params={"problem": PROBLEM},
        headers=people.headers("instructor"),
    )
    assert regrade_a.status_code == 202, regrade_a.text
    assert _finished(api, in_a["id"], people.headers("ta"))["verdict"] == "accepted"
