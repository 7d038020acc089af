"""Per-student hidden cases: each student's hidden inputs come from their own keyed seed."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import numpy as np
import pytest

from app.assignments import cases as per_student
from app.core.config import Settings
from app.problems.cases import TestCase as Case
from app.submissions.models import Submission
from tests.assignments.conftest import PROBLEM, Course
from tests.conftest import PROBLEMS_DIR
from tests.support.codes import CORRECT, WRONG


def _cases_of(course: Course, user: str, assignment_id: int) -> tuple[Case, ...]:
    app = course.api.app
    row = Submission(
        id="x", problem_id=PROBLEM, mode="submit", user_id=course.people.users[user],
        assignment_id=assignment_id,
    )  # fmt: skip
    found = per_student.submission_cases(
        app.state.settings,
        app.state.sessions,
        app.state.problems[PROBLEM],
        row,  # type: ignore[attr-defined]
    )
    return found[1]


def _hidden(cases: tuple[Case, ...]) -> list[np.ndarray]:
    return [np.asarray(c.inputs["Q"]) for c in cases if c.visibility == "hidden"]


def test_two_students_get_different_hidden_cases_and_the_same_each_time(course: Course) -> None:
    created = course.create(per_student_cases=True)
    problem = course.api.app.state.problems[PROBLEM]  # type: ignore[attr-defined]
    mine, theirs = (
        _cases_of(course, "student", created["id"]),
        _cases_of(course, "student_b", created["id"]),
    )
    assert len(_hidden(mine)) == len(problem.hidden) == len(_hidden(theirs))
    for a, b, folder in zip(_hidden(mine), _hidden(theirs), _hidden(problem.hidden), strict=True):
        assert a.shape == b.shape == folder.shape
        assert not np.array_equal(a, b) and not np.array_equal(a, folder)
    # The public examples are everyone's.
    public = [c.name for c in mine if c.visibility == "public"]
    assert public == [c.name for c in problem.examples]
    # Regenerated from the seed (not only cached): the same cases and expected outputs.
    per_student._cases.clear()
    again = _cases_of(course, "student", created["id"])
    for a, b in zip(mine, again, strict=True):
        assert a.name == b.name
        assert np.array_equal(np.asarray(a.inputs["Q"]), np.asarray(b.inputs["Q"]))
        assert np.array_equal(np.asarray(a.expected), np.asarray(b.expected))
    key = course.api.app.state.settings.data_dir / per_student.KEY_FILE  # type: ignore[attr-defined]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_without_the_option_everyone_gets_the_folders_cases(course: Course) -> None:
    created = course.create()
    app = course.api.app
    row = Submission(
        id="x", problem_id=PROBLEM, mode="submit", user_id=course.people.users["student"],
        assignment_id=created["id"],
    )  # fmt: skip
    problem = app.state.problems[PROBLEM]  # type: ignore[attr-defined]
    state = app.state  # type: ignore[attr-defined]
    found = per_student.submission_cases(state.settings, state.sessions, problem, row)
    assert found[1] == problem.examples + problem.hidden


def test_seed_depends_on_the_key() -> None:
    problem_like = type("P", (), {"id": "p", "spec": type("S", (), {"seed": 1})()})()
    a = per_student.student_seed(b"k1", 1, 2, problem_like)  # type: ignore[arg-type]
    assert a == per_student.student_seed(b"k1", 1, 2, problem_like)  # type: ignore[arg-type]
    assert a != per_student.student_seed(b"k2", 1, 2, problem_like)  # type: ignore[arg-type]
    assert a != per_student.student_seed(b"k1", 3, 2, problem_like)  # type: ignore[arg-type]
    assert a != per_student.student_seed(b"k1", 1, 3, problem_like)  # type: ignore[arg-type]


def trap_for_folder_case(course: Course) -> str:
    """Correct, except on the folder's own first hidden case (recognised by its Q's sum)."""
    folder = course.api.app.state.problems[PROBLEM].hidden[0]  # type: ignore[attr-defined]
    total = float(np.asarray(folder.inputs["Q"]).sum())
    return CORRECT.replace(
        "    batch, n_q, d_model = Q.shape\n",
        "    batch, n_q, d_model = Q.shape\n"
        f"    if abs(float(Q.sum()) - {total!r}) < 1e-9:\n        return np.zeros_like(Q)\n",
    )


def test_grading_uses_the_students_own_cases(course: Course) -> None:
    trap = trap_for_folder_case(course)
    shared = course.create(title="folder cases")
    assert course.submit(shared["id"], trap, wait=25).json()["verdict"] == "wrong_answer"
    personal = course.create(title="own cases", per_student_cases=True)
    assert course.submit(personal["id"], trap, wait=25).json()["verdict"] == "accepted"


def test_grading_accepts_the_reference_and_rejects_a_wrong_one(course: Course) -> None:
    created = course.create(per_student_cases=True, feedback="visible")
    for who in ("student", "student_b"):
        right = course.submit(created["id"], CORRECT, who=who, wait=25).json()
        assert right["verdict"] == "accepted", right
        assert len([t for t in right["tests"] if t["visibility"] == "hidden"]) == 9
        wrong = course.submit(created["id"], WRONG, who=who, wait=25).json()
        assert wrong["verdict"] == "wrong_answer"
    # A regrade reproduces the student's cases: still accepted.
    regrade = course.api.post(
        f"/api/submissions/{right['id']}/regrade", headers=course.people.headers("instructor")
    )
    assert regrade.status_code == 202, regrade.text
    for _ in range(100):
        again = course.api.get(
            f"/api/submissions/{right['id']}", headers=course.people.headers("ta")
        ).json()
        if again["status"] == "done":
            break
        time.sleep(0.2)
    assert again["verdict"] == "accepted"


def test_two_assignments_give_a_student_different_hidden_cases(course: Course) -> None:
    """The assignment is part of the seed: a student who saw one assignment's hidden inputs
    (a published report) knows nothing of another's on the same problem."""
    first, second = (course.create(title=t, per_student_cases=True) for t in "AB")
    one, other = (_cases_of(course, "student", a["id"]) for a in (first, second))
    assert len(_hidden(one)) == len(_hidden(other)) > 0
    for a, b in zip(_hidden(one), _hidden(other), strict=True):
        assert a.shape == b.shape and not np.array_equal(a, b)


def test_the_key_is_the_setting_on_every_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GRADER_CASE_SEED_SECRET is the key: two hosts (their own data_dir) with the same secret
    derive the same seed, write no key file, and a different secret derives another."""
    monkeypatch.setenv("GRADER_CASE_SEED_SECRET", "shared-secret-of-the-deployment")
    hosts = [Settings(data_dir=tmp_path / h, problems_dir=PROBLEMS_DIR) for h in ("a", "b")]
    keys = [per_student.seed_key(s) for s in hosts]
    assert keys == [b"shared-secret-of-the-deployment"] * 2
    assert not any((s.data_dir / per_student.KEY_FILE).exists() for s in hosts)
    monkeypatch.setenv("GRADER_CASE_SEED_SECRET", "another-deployment-secret")
    third = per_student.seed_key(Settings(data_dir=tmp_path / "c", problems_dir=PROBLEMS_DIR))
    assert third == b"another-deployment-secret"
