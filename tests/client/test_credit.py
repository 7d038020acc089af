"""Credit from the terminal and the notebook, against a real server: a student signed in with a
password lists their courses and assignments (their own due date, the credit a submission earns
now, attempts), submits into an assignment with ``tj submit --assignment`` and with
``judge.submit(..., assignment=...)`` from a real kernel, sees attempts left, and under a
restricting feedback policy sees no hidden-case detail on any surface the client prints."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from nbclient import NotebookClient

from tests.assignments.test_feedback import HIDDEN_FAIL, assert_no_hidden_detail
from tests.client.conftest import PROBLEM, Grader, make_account, tj
from tests.support.codes import CORRECT, WRONG

pytestmark = pytest.mark.timeout(300)

PASSWORD = "a student's password"


def at(hours: float) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


@dataclass
class Class:
    """One course on the shared server: its admin-made assignments, and a student's token."""

    url: str
    course: int
    student: str
    staff: str
    # by kind: "graded" (2 attempts, full report), "summary" (hidden cases as a count),
    # "late" (past due, 80 % until tomorrow), "closed" (past its last deadline)
    assignments: dict[str, int]


def _student_token(grader: Grader, email: str) -> str:
    make_account(grader.data_dir, email, "Sam Student", PASSWORD)
    token = httpx.post(
        f"{grader.url}/api/auth/token",
        json={"email": email, "password": PASSWORD, "name": "credit tests"},
    )
    assert token.status_code == 201, token.text
    secret: str = token.json()["secret"]
    return secret


@pytest.fixture(scope="module")
def klass(grader: Grader) -> Iterator[Class]:
    staff = {"Authorization": f"Bearer {grader.token}"}
    with httpx.Client(base_url=grader.url, timeout=30) as api:
        course = api.post("/api/courses", json={"title": "Deep learning, credit"}, headers=staff)
        assert course.status_code == 201, course.text
        course_id, code = course.json()["id"], course.json()["join_code"]
        student = _student_token(grader, "sam.credit@example.edu")
        joined = api.post(
            "/api/courses/join", json={"code": code}, headers={"Authorization": f"Bearer {student}"}
        )
        assert joined.status_code == 200, joined.text
        bodies: dict[str, dict[str, Any]] = {
            "graded": {"due_at": at(48), "max_attempts": 2},
            "summary": {"due_at": at(48), "feedback": "summary"},
            "late": {"due_at": at(-2), "late_deadlines": [{"until": at(24), "credit": 0.8}]},
            "closed": {"due_at": at(-2)},
        }
        made = {}
        for kind, fields in bodies.items():
            body = {
                "title": f"Homework {kind}",
                "problems": [{"problem_id": PROBLEM, "points": 10}],
                **fields,
            }
            created = api.post(f"/api/courses/{course_id}/assignments", json=body, headers=staff)
            assert created.status_code == 201, created.text
            made[kind] = created.json()["id"]
    yield Class(grader.url, course_id, student, grader.token, made)


def run_tj(klass: Class, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return tj(*args, url=klass.url, token=klass.student, cwd=cwd)


def grades_me(klass: Class, assignment: int) -> dict[str, Any]:
    got = httpx.get(
        f"{klass.url}/api/courses/{klass.course}/assignments/{assignment}/grades/me",
        headers={"Authorization": f"Bearer {klass.student}"},
    )
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def test_tj_lists_my_courses_and_assignments_with_the_credit_rule_now(klass: Class):
    courses = run_tj(klass, "courses")
    assert courses.returncode == 0, courses.stderr
    assert "Deep learning, credit" in courses.stdout and "student" in courses.stdout

    listed = run_tj(klass, "assignments", "--json")
    assert listed.returncode == 0, listed.stderr
    mine = {a["id"]: a["mine"] for a in json.loads(listed.stdout)}
    ids = klass.assignments
    assert mine[ids["graded"]]["rule"] == "on time: 100 %"
    assert mine[ids["graded"]]["attempts_allowed"] == 2
    assert mine[ids["late"]]["rule"] == "late: 80 %" and mine[ids["late"]]["open"]
    assert not mine[ids["closed"]]["open"] and "closed" in mine[ids["closed"]]["rule"]

    table = run_tj(klass, "assignments", "--course", str(klass.course))
    assert table.returncode == 0, table.stderr
    for text in ("Homework graded", "on time: 100 %", "late: 80 %", "closed"):
        assert text in table.stdout, text

    one = run_tj(klass, "assignment", str(ids["late"]))
    assert one.returncode == 0, one.stderr
    assert "late: 80 %" in one.stdout and "0 used, no limit" in one.stdout


def test_tj_submits_for_credit_and_counts_attempts(klass: Class, tmp_path: Path):
    assignment = str(klass.assignments["graded"])
    (tmp_path / "wrong.py").write_text(WRONG)
    (tmp_path / "right.py").write_text(CORRECT)

    wrong = run_tj(klass, "submit", PROBLEM, "wrong.py", "--assignment", assignment, cwd=tmp_path)
    assert wrong.returncode == 1, wrong.stderr
    assert "attempts 0 of 2 used, 2 left · on time: 100 %" in wrong.stderr
    assert "attempts 1 of 2 used, 1 left" in wrong.stderr
    assert "missing-wo" in wrong.stdout  # a full report: this assignment's policy is visible

    # The same code again asks first and spends nothing.
    again = run_tj(klass, "submit", PROBLEM, "wrong.py", "--assignment", assignment, cwd=tmp_path)
    assert again.returncode == 3, again.stderr
    assert "identical to your graded attempt" in again.stderr and "--force" in again.stderr

    # Examples never cost an attempt.
    examples = run_tj(klass, "run", PROBLEM, "right.py", "--assignment", assignment, cwd=tmp_path)
    assert examples.returncode == 0, examples.stderr
    assert "attempts 1 of 2 used, 1 left" in examples.stderr

    right = run_tj(klass, "submit", PROBLEM, "right.py", "--assignment", assignment, cwd=tmp_path)
    assert right.returncode == 0, right.stderr
    assert "attempts 2 of 2 used, 0 left" in right.stderr
    grades = grades_me(klass, klass.assignments["graded"])
    assert grades["total"] == 10 and grades["problems"][0]["attempts_used"] == 2

    refused = run_tj(klass, "submit", PROBLEM, "right.py", "--assignment", assignment, cwd=tmp_path)
    assert refused.returncode == 3, refused.stderr
    assert "graded attempts on this problem are used" in refused.stderr

    # Late: the attempt is graded and earns the late credit.
    late = klass.assignments["late"]
    done = run_tj(klass, "submit", PROBLEM, "right.py", "--assignment", str(late), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "· late: 80 %" in done.stderr
    assert grades_me(klass, late)["total"] == pytest.approx(8.0)
    forced = run_tj(
        klass, "submit", PROBLEM, "right.py", "--assignment", str(late), "--force", cwd=tmp_path
    )
    assert forced.returncode == 0, forced.stderr
    assert grades_me(klass, late)["problems"][0]["attempts_used"] == 2

    closed = klass.assignments["closed"]
    shut = run_tj(klass, "submit", PROBLEM, "right.py", "--assignment", str(closed), cwd=tmp_path)
    assert shut.returncode == 3, shut.stderr
    assert "closed: the last deadline has passed (not accepting)" in shut.stderr
    assert "submissions are no longer accepted" in shut.stderr
    assert grades_me(klass, closed)["problems"][0]["attempts_used"] == 0


def test_tj_under_a_summary_policy_prints_no_hidden_case_detail(klass: Class, tmp_path: Path):
    (tmp_path / "hidden_fail.py").write_text(HIDDEN_FAIL)
    assignment = str(klass.assignments["summary"])
    seen = []
    for extra in ((), ("--json", "--force")):  # the same code twice: the second is forced
        out = run_tj(
            klass, "submit", PROBLEM, "hidden_fail.py", "--assignment", assignment, *extra,
            cwd=tmp_path,
        )  # fmt: skip
        assert out.returncode == 1, out.stderr
        assert_no_hidden_detail(out.stdout + out.stderr)
        seen.append(out)
    assert "0 of 9 hidden cases passed" in seen[0].stdout
    body = json.loads(seen[1].stdout)
    assert body["view"] == "summary" and body["verdict"] == "runtime_error"
    again = run_tj(klass, "result", body["id"])
    assert_no_hidden_detail(again.stdout + again.stderr)
    # The detail exists: the course's staff read it for the same submission.
    staff = httpx.get(
        f"{klass.url}/api/submissions/{body['id']}",
        headers={"Authorization": f"Bearer {klass.staff}"},
    )
    assert staff.status_code == 200 and "hidden-1" in staff.text


def notebook(klass: Class) -> nbformat.NotebookNode:
    summary = klass.assignments["summary"]
    cells = [
        "from tensorjudge_client import Judge\n"
        f"judge = Judge({klass.url!r}, token={klass.student!r})",
        "judge.courses()",
        "judge.assignments()",
        "import numpy as np",
        HIDDEN_FAIL.replace("import numpy as np\n", ""),
        # force: the tj test may have sent this same code already (nothing spent, asked first)
        f"result = judge.submit({PROBLEM!r}, multi_head_attention, assignment={summary}, "
        "force=True)\nresult",
        f"judge.attempts({summary})",
        "print(result.verdict, result['view'], judge.attempts("
        f"{summary}, {PROBLEM!r})[0].attempts_used)",
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def html_of(cell: Any) -> str:
    return "".join(o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))


def test_notebook_submits_for_credit_and_sees_only_the_policys_view(klass: Class):
    before = grades_me(klass, klass.assignments["summary"])["problems"][0]["attempts_used"]
    nb = notebook(klass)
    NotebookClient(nb, kernel_name="python3", timeout=240).execute()
    errors = [o for c in nb.cells for o in c.outputs if o["output_type"] == "error"]
    assert not errors, json.dumps(errors, indent=1)[:3000]

    assert "Deep learning, credit" in html_of(nb.cells[1])
    listing = html_of(nb.cells[2])
    assert "Homework summary" in listing and "on time: 100 %" in listing
    assert "late: 80 %" in listing

    shown = html_of(nb.cells[5])
    assert 'data-verdict="runtime_error"' in shown and "0 of 9 hidden cases passed" in shown
    everything = json.dumps([c.outputs for c in nb.cells[5:]])
    assert_no_hidden_detail(everything)

    assert f"{before + 1} used, no limit" in html_of(nb.cells[6])
    printed = "".join(o.get("text", "") for o in nb.cells[7].outputs)
    assert printed.split() == ["runtime_error", "summary", str(before + 1)]
