"""``tj`` as a subprocess against a real server and the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from tensorjudge_client import view

from sandbox.backends.runtime import find_torch
from tests.client.conftest import PROBLEM, Grader, tj
from tests.problems.torch_solutions import SOLUTIONS
from tests.support.codes import CORRECT, WRONG
from tests.support.services import free_port

pytestmark = pytest.mark.timeout(300)


def test_wrong_solution_exits_1_with_the_diagnosis_then_the_fix_exits_0(
    grader: Grader, tmp_path: Path
):
    solution = tmp_path / "mha.py"
    solution.write_text(WRONG)
    wrong = tj("submit", PROBLEM, str(solution), url=grader.url)
    assert wrong.returncode == 1, wrong.stderr
    out = wrong.stdout
    assert "Wrong answer" in out
    assert "✗ Merge heads and project (failed)" in out  # the requirement checklist
    assert "missing-wo" in out and "Output projection W_o missing" in out  # the diagnosis card
    assert "Hint:" in out and "merged @ W_o" in out
    assert "Tests (0 of" in out and "hidden-1" in out  # the test table
    # Live progress from the event stream, on stderr so stdout stays the result.
    # Each stage once, in order ("Queued" only when it waited: an idle grader takes it at once).
    progress = wrong.stderr.splitlines()
    assert "· Running your code in the sandbox" in progress
    assert len(progress) == len(set(progress)), progress
    assert "Sandbox run finished" in wrong.stderr

    solution.write_text(CORRECT)
    fixed = tj("submit", PROBLEM, str(solution), url=grader.url)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Accepted" in fixed.stdout and "score 100%" in fixed.stdout


def test_json_prints_the_raw_result_and_run_grades_public_examples_only(
    grader: Grader, tmp_path: Path
):
    solution = tmp_path / "mha.py"
    solution.write_text(WRONG)
    result = tj("run", PROBLEM, str(solution), "--json", url=grader.url)
    assert result.returncode == 1, result.stderr
    body = json.loads(result.stdout)
    assert body["status"] == "done" and body["verdict"] == "wrong_answer"
    assert body["mode"] == "examples"
    assert {t["visibility"] for t in body["tests"]} == {"public"}
    assert [d["code"] for d in body["diagnoses"]] == ["missing-wo"]

    again = tj("result", body["id"], "--json", url=grader.url)
    assert again.returncode == 1
    assert json.loads(again.stdout)["id"] == body["id"]


def test_problems_show_and_start(grader: Grader, tmp_path: Path):
    listing = tj("problems", "--json", url=grader.url)
    assert listing.returncode == 0
    assert PROBLEM in [p["id"] for p in json.loads(listing.stdout)]

    shown = tj("show", PROBLEM, url=grader.url)
    assert shown.returncode == 0
    assert "Multi-head attention" in shown.stdout
    assert "$d_{model}$" in shown.stdout  # math left as TeX
    assert "Requirements" in shown.stdout and "merge-and-project" in shown.stdout

    started = tj("start", PROBLEM, url=grader.url, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    target = tmp_path / "multi_head_attention.py"
    starter = target.read_text()
    assert "def multi_head_attention(" in starter

    target.write_text("# my work\n")
    refused = tj("start", PROBLEM, str(target), url=grader.url, cwd=tmp_path)
    assert refused.returncode == 1
    assert "--force" in refused.stderr
    assert target.read_text() == "# my work\n", "an existing file is never overwritten"

    forced = tj("start", PROBLEM, str(target), "--force", url=grader.url, cwd=tmp_path)
    assert forced.returncode == 0
    assert target.read_text() == starter


def case_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    d = 6
    w = {f"W_{n}": rng.standard_normal((d, d)) / d**0.5 for n in "qkvo"}
    return {
        "Q": rng.standard_normal((2, 3, d)),
        "K": rng.standard_normal((2, 5, d)),
        "V": rng.standard_normal((2, 5, d)),
        **w,
    }


def test_cases_add_list_remove_with_a_real_token(grader: Grader, tmp_path: Path):
    rng = np.random.default_rng(16)
    npz = tmp_path / "from-npz.npz"
    np.savez(npz, **case_inputs(rng), num_heads=np.int64(2))
    as_json = tmp_path / "cli-json.json"
    inputs = {k: v.tolist() for k, v in case_inputs(rng).items()}
    as_json.write_text(json.dumps({**inputs, "num_heads": 3}))

    no_token = tj("cases", "add", PROBLEM, str(npz), url=grader.url)
    assert no_token.returncode == 3
    assert "TJ_TOKEN" in no_token.stderr

    added = tj(
        "cases", "add", PROBLEM, str(npz), "--visibility", "public", "--json",
        url=grader.url, token=grader.token,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    first = json.loads(added.stdout)
    assert first["name"] == "from-npz" and first["visibility"] == "public"
    second = tj("cases", "add", PROBLEM, str(as_json), "--weight", "2", url=grader.url,
                token=grader.token)  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert "Added case cli-json" in second.stdout

    listed = tj("cases", "list", PROBLEM, "--json", url=grader.url, token=grader.token)
    names = {c["name"]: c for c in json.loads(listed.stdout)["cases"]}
    assert names["cli-json"]["scalars"] == {"num_heads": 3} and names["cli-json"]["weight"] == 2
    assert "from-npz" in names
    assert any(c["visibility"] == "hidden" for c in names.values())  # a token sees hidden ones
    table = tj("cases", "list", PROBLEM, url=grader.url, token=grader.token)
    assert table.returncode == 0 and "cli-json" in table.stdout
    # One output column (not "Output shape" beside "Output shapes"), the inputs in one; wide
    # enough here that no header folds.
    rows = [view.case_row(c) for c in names.values()]
    wide = view.to_text(view.records_table("cases", rows), width=300)
    header = next(line for line in wide.splitlines() if "Name" in line)
    assert header.count("Output shape") == 1 and "Output shape(s)" in header
    assert "Scalars" not in header and "Shapes" not in header and "Inputs" in header
    assert "num_heads=3" in wide and "Q (2, 3, 6)" in wide

    by_name = tj("cases", "remove", PROBLEM, "cli-json", url=grader.url, token=grader.token)
    assert by_name.returncode == 0, by_name.stderr
    by_id = tj("cases", "remove", PROBLEM, str(first["id"]), url=grader.url, token=grader.token)
    assert by_id.returncode == 0, by_id.stderr
    left = json.loads(tj("cases", "list", PROBLEM, "--json", url=grader.url).stdout)
    assert not {"cli-json", "from-npz"} & {c["name"] for c in left["cases"]}
    gone = tj("cases", "remove", PROBLEM, "cli-json", url=grader.url, token=grader.token)
    assert gone.returncode == 3 and "no stored test case named 'cli-json'" in gone.stderr


def test_a_courses_own_cases_with_course(grader: Grader, tmp_path: Path):
    """``--course N``: the course's own cases, which the catalog's listing does not hold."""
    made = httpx.post(
        f"{grader.url}/api/courses",
        json={"title": "tj course"},
        headers={"Authorization": f"Bearer {grader.token}"},
    )
    assert made.status_code == 201, made.text
    scope = ("--course", str(made.json()["id"]))
    case = tmp_path / "course-own.json"
    inputs = {k: v.tolist() for k, v in case_inputs(np.random.default_rng(17)).items()}
    case.write_text(json.dumps({**inputs, "num_heads": 2}))
    added = tj("cases", "add", PROBLEM, str(case), *scope, "--json", url=grader.url,
               token=grader.token)  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["course_id"] == int(scope[1])
    own = tj("cases", "list", PROBLEM, *scope, "--json", url=grader.url, token=grader.token)
    assert [c["name"] for c in json.loads(own.stdout)["cases"]] == ["course-own"]
    catalog = tj("cases", "list", PROBLEM, "--json", url=grader.url, token=grader.token)
    assert "course-own" not in {c["name"] for c in json.loads(catalog.stdout)["cases"]}
    removed = tj("cases", "remove", PROBLEM, "course-own", *scope, url=grader.url,
                 token=grader.token)  # fmt: skip
    assert removed.returncode == 0, removed.stderr


def test_clear_messages_for_404_413_422_and_a_server_that_is_down(grader: Grader, tmp_path: Path):
    solution = tmp_path / "s.py"
    solution.write_text(CORRECT)
    missing = tj("submit", "no-such-problem", str(solution), url=grader.url)
    assert missing.returncode == 3
    assert "not found: no problem with id 'no-such-problem'" in missing.stderr
    assert "tj problems" in missing.stderr

    solution.write_text(CORRECT + "#" * 70_000)
    too_large = tj("submit", PROBLEM, str(solution), url=grader.url)
    assert too_large.returncode == 3
    assert "too large for this server" in too_large.stderr
    assert "the limit is 65536" in too_large.stderr

    solution.write_text("   \n")
    empty = tj("submit", PROBLEM, str(solution), url=grader.url)
    assert empty.returncode == 3
    assert "refused the request as invalid" in empty.stderr and "(field: code)" in empty.stderr

    down = tj("problems", url=f"http://127.0.0.1:{free_port()}", timeout=60)
    assert down.returncode == 3
    assert "cannot reach the TensorJudge server" in down.stderr and "TJ_URL" in down.stderr

    unreadable = tj("submit", PROBLEM, str(tmp_path / "nope.py"), url=grader.url)
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr


def test_a_url_without_a_scheme_means_http_and_a_wrong_one_says_why(grader: Grader):
    bare = grader.url.removeprefix("http://")
    assert bare != grader.url
    listing = tj("--url", bare, "problems", "--json", url="")
    assert listing.returncode == 0, listing.stderr
    assert PROBLEM in [p["id"] for p in json.loads(listing.stdout)]

    wrong = tj("--url", f"ftp://{bare}", "problems", url="")
    assert wrong.returncode == 2
    assert "the scheme must be http:// or https://, not ftp://" in wrong.stderr
    port = tj("problems", url="127.0.0.1:80oo")
    assert port.returncode == 2 and "is not a server URL" in port.stderr


def test_submissions_list_and_regrade_with_a_real_token(grader: Grader, tmp_path: Path):
    solution = tmp_path / "wrong.py"
    solution.write_text(WRONG)
    graded = tj("submit", PROBLEM, str(solution), "--json", url=grader.url)
    submission_id = json.loads(graded.stdout)["id"]

    found = tj(
        "submissions",
        "list",
        "--diagnosis",
        "missing-wo",
        "--problem",
        PROBLEM,
        "--json",
        "--since",
        "2000-01-01",  # a day alone: its start (UTC)
        url=grader.url,
        token=grader.token,
    )
    assert found.returncode == 0, found.stderr
    rows = json.loads(found.stdout)["items"]
    assert rows[0]["id"] == submission_id and rows[0]["diagnoses"] == ["missing-wo"]
    assert all("missing-wo" in r["diagnoses"] for r in rows)

    table = tj("submissions", "list", "--limit", "1", url=grader.url, token=grader.token)
    assert table.returncode == 0, table.stderr
    assert submission_id in table.stdout and "Wrong answer" in table.stdout
    assert "missing-wo" in table.stdout

    again = tj("submissions", "regrade", submission_id, url=grader.url, token=grader.token)
    assert again.returncode == 0, again.stderr
    assert f"Queued {submission_id} for grading again (run 2)" in again.stdout

    # Not on a terminal, "all matching" wants --yes, and says how many it would touch first.
    unsure = tj(
        "submissions",
        "regrade",
        "--all-matching",
        "--diagnosis",
        "no-such-code",
        url=grader.url,
        token=grader.token,
    )
    assert unsure.returncode == 2 and "0 submissions match; add --yes" in unsure.stderr
    sure = tj(
        "submissions",
        "regrade",
        "--all-matching",
        "--diagnosis",
        "no-such-code",
        "--yes",
        url=grader.url,
        token=grader.token,
    )
    assert sure.returncode == 0 and "0 matched: 0 queued, 0 skipped" in sure.stdout

    anonymous = tj("submissions", "list", url=grader.url)
    assert anonymous.returncode == 3 and "needs an account" in anonymous.stderr
    # --course asks the course's list (no such course here).
    course = tj("submissions", "list", "--course", "999", url=grader.url, token=grader.token)
    assert course.returncode == 3 and "no course 999" in course.stderr


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_start_writes_the_torch_starter_and_a_torch_file_is_graded_as_torch(
    grader: Grader, tmp_path: Path
):
    started = tj("start", PROBLEM, "--framework", "torch", url=grader.url, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    target = tmp_path / "multi_head_attention.py"
    starter = target.read_text()
    assert starter.startswith("import torch\n") and "def multi_head_attention(" in starter

    target.write_text(SOLUTIONS[PROBLEM])  # nothing says torch but the file's imports
    graded = tj("run", PROBLEM, str(target), "--json", url=grader.url)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    body = json.loads(graded.stdout)
    assert body["verdict"] == "accepted"
