"""The diagnosability report and the statistics, computed for real."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.grading.schemas import Diagnosis, GradeReport
from app.grading.verdicts import Verdict
from app.reports.stats import problem_stats
from app.submissions.models import Submission
from app.worker.runtime import open_database
from tests.conftest import PROBLEMS_DIR
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    error_of,
    make_settings,
)
from tests.support.api import wait_done
from tests.support.codes import CORRECT, WRONG

DIAG = f"/api/problems/{PROBLEM}/diagnosability"
STATS = f"/api/problems/{PROBLEM}/stats"

# A problem folder whose cases all have one head: many mistakes pass them.
WEAK_CASES = """
import numpy as np

from app.problems.cases import InvalidCase, TestCase


def check_case(inputs, dims):
    if dims["d_model"] % dims["num_heads"] != 0:
        raise InvalidCase("num_heads", "d_model is not divisible by num_heads")


def _case(name, rng, batch, n_q, n_k, d_model, visibility="hidden"):
    w = 1.0 / np.sqrt(d_model)
    shapes = {"Q": (batch, n_q, d_model), "K": (batch, n_k, d_model), "V": (batch, n_k, d_model)}
    inputs = {k: rng.standard_normal(s) for k, s in shapes.items()}
    for k in ("W_q", "W_k", "W_v", "W_o"):
        inputs[k] = w * rng.standard_normal((d_model, d_model))
    inputs["num_heads"] = 1
    return TestCase(name=name, visibility=visibility, inputs=inputs)


def public_examples():
    return [_case("one-head", np.random.default_rng(1), 1, 3, 3, 4, "public")]


def hidden_cases(rng):
    return [_case("one-head-a", rng, 2, 3, 4, 4), _case("one-head-b", rng, 1, 5, 2, 6)]
"""


@pytest.fixture
def weak_problems(tmp_path: Path) -> Path:
    root = tmp_path / "problems"
    shutil.copytree(
        PROBLEMS_DIR / PROBLEM, root / PROBLEM, ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / PROBLEM / "cases.py").write_text(WEAK_CASES)
    return root


def test_the_shipped_cases_catch_and_separate_every_fault(make_client: MakeClient):
    api = make_client()
    report = api.get(DIAG, headers=bearer(add_tokens(api).admin)).json()
    assert report["test_set_version"] == 1 and report["cases"] == 11
    assert report["max_faults"] == 2 and report["fault_probes"] == 5
    assert report["missed"] == []
    assert report["confusable_by_cases"] == [] and report["confusable_with_probes"] == []
    assert report["pairs"]["told_apart_by_cases"] == report["pairs"]["total"]
    faults = {f["code"]: f for f in report["faults"]}
    assert len(faults) == 17 and all(f["caught"] for f in faults.values())
    # Only the large-magnitude case overflows an unstable softmax.
    assert faults["unstable-softmax"]["caught_by"] == 1
    assert faults["missing-wo"]["caught_by"] == 11


def test_a_weak_test_set_is_reported_and_improves_when_a_case_is_added(
    make_client: MakeClient, weak_problems: Path
):
    api = make_client(problems_dir=weak_problems)
    headers = bearer(add_tokens(api).admin)
    report = api.get(DIAG, headers=headers).json()
    assert report["cases"] == 3
    faults = {f["code"]: f for f in report["faults"]}
    for code in ("reshape-order", "no-head-transpose", "no-transpose-back", "scale-dmodel"):
        assert not faults[code]["caught"] and faults[code]["caught_by"] == 0, code
        assert not faults[code]["told_apart_by_cases"], code
        assert code in report["missed"]
        # The probes still tell them apart: the diagnosis is fine, the tests are not.
        assert faults[code]["told_apart_with_probes"], code
    assert faults["missing-wo"]["caught_by"] == 3
    correct_group = next(g for g in report["confusable_by_cases"] if "(correct)" in g)
    assert {"reshape-order", "no-head-transpose", "scale-dmodel"} <= set(correct_group)
    assert "reshape-order + scale-dmodel" in report["missed"], "pairs are reported too"
    assert report["pairs"]["told_apart_by_cases"] < report["pairs"]["total"]
    # The probes still separate everything but a head count fixed at 8: on their widths of 8 a
    # head is one column wide, where the split order and the scale cannot show.
    assert report["confusable_with_probes"] == [
        [
            "fixed-heads",
            "fixed-heads + no-scale",
            "fixed-heads + reshape-order",
            "fixed-heads + scale-dk-not-sqrt",
        ]
    ]

    good = {"name": "two-heads-cross", "inputs": as_json(case_inputs(seed=4))}
    assert api.post(CASES, json=good, headers=headers).status_code == 201
    better = api.get(DIAG, headers=headers).json()
    assert better["test_set_version"] == 2 and better["cases"] == 4
    faults = {f["code"]: f for f in better["faults"]}
    assert faults["reshape-order"]["caught_by"] == 1 and faults["reshape-order"]["caught"]
    assert "reshape-order" not in better["missed"]
    assert better["pairs"]["told_apart_by_cases"] > report["pairs"]["told_apart_by_cases"]


def test_diagnosability_checks_its_query(api: TestClient):
    headers = bearer(add_tokens(api).admin)
    for value in ("0", "5", "x"):
        response = api.get(DIAG, params={"max_faults": value}, headers=headers)
        assert response.status_code == 422, value
        assert error_of(response)["field"] == "max_faults"
    # Past the problem's own search (3 faults), the report is that search's, and says so.
    deepest = api.get(DIAG, params={"max_faults": 4}, headers=headers)
    assert deepest.status_code == 200 and deepest.json()["max_faults"] == 3
    single = api.get(DIAG, params={"max_faults": 1}, headers=headers).json()
    assert single["combinations"] == 17 and single["pairs"]["total"] == 18 * 17 // 2


def test_stats_count_submissions_acceptance_and_diagnoses(api: TestClient):
    headers = bearer(add_tokens(api).admin)
    url = f"/api/problems/{PROBLEM}/submissions"
    ids = [
        api.post(url, json={"code": CORRECT}).json()["id"],
        api.post(url, json={"code": WRONG}).json()["id"],
        # Practice runs are not counted.
        api.post(url, json={"code": WRONG + "\n#\n", "mode": "examples"}).json()["id"],
    ]
    for submission_id in ids:
        wait_done(api, submission_id)
    stats = api.get(STATS, headers=headers).json()
    assert stats["submissions"] == 2 and stats["graded"] == 2 and stats["accepted"] == 1
    assert stats["acceptance_rate"] == 0.5
    assert stats["verdicts"] == {"accepted": 1, "wrong_answer": 1}
    assert stats["diagnoses"] == [{"code": "missing-wo", "count": 1}]
    today = datetime.now(UTC).date().isoformat()
    assert stats["over_time"] == [
        {"date": today, "submissions": 2, "graded": 2, "accepted": 1, "acceptance_rate": 0.5}
    ]
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    empty = api.get(STATS, params={"since": later}, headers=headers).json()
    assert empty["submissions"] == 0 and empty["acceptance_rate"] is None
    assert empty["diagnoses"] == [] and empty["over_time"] == []
    assert api.get(STATS, params={"until": later}, headers=headers).json()["submissions"] == 2
    # An empty window is answered, with nothing in it.
    window = {"since": later, "until": "2020-01-01T00:00:00"}
    backwards = api.get(STATS, params=window, headers=headers)
    assert backwards.status_code == 200 and backwards.json()["submissions"] == 0
    # The ends of time, where a zone would move them past what a date can hold.
    window = {"since": "0001-01-01T00:00:00+01:00", "until": "9999-12-31T23:59:59-01:00"}
    assert api.get(STATS, params=window, headers=headers).json()["submissions"] == 2
    # Only date-times (as documented): pydantic alone would read 0.5 as a Unix time.
    for value in ("0.5", "2026-01-01", "tomorrow"):
        bad = api.get(STATS, params={"until": value}, headers=headers)
        assert bad.status_code == 422 and error_of(bad)["field"] == "until", value


def _report(verdict: Verdict, codes: list[str]) -> str:
    diagnoses = [
        Diagnosis(code=c, requirement=None, title=c, explanation="-", hint="-") for c in codes
    ]
    score = 1.0 if verdict == Verdict.ACCEPTED else 0.0
    return GradeReport(
        verdict=verdict, score=score, requirements=[], diagnoses=diagnoses, tests=[]
    ).model_dump_json()


def test_stats_sql_windows_days_and_codes(tmp_path: Path, database_url: str | None):
    engine, sessions = open_database(make_settings(tmp_path / "data", database_url))
    day0 = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
    rows: list[tuple[timedelta, str, Verdict | None, list[str], str]] = [
        (timedelta(0), "done", Verdict.ACCEPTED, [], "submit"),
        (timedelta(minutes=20), "done", Verdict.WRONG_ANSWER, ["no-scale", "missing-wo"], "submit"),
        (timedelta(minutes=40), "done", Verdict.WRONG_ANSWER, ["no-scale"], "submit"),  # next day
        (timedelta(days=1), "done", Verdict.WRONG_ANSWER, ["no-scale", "no-scale"], "submit"),
        (timedelta(days=1, minutes=5), "queued", None, [], "submit"),
        (timedelta(days=1, minutes=6), "done", Verdict.WRONG_ANSWER, ["missing-wo"], "examples"),
    ]
    with sessions() as session:
        for n, (offset, status, verdict, codes, mode) in enumerate(rows):
            session.add(
                Submission(
                    id=f"s{n}",
                    problem_id=PROBLEM,
                    mode=mode,
                    code="-",
                    code_sha256="-",
                    client="ip:test",
                    request_sha256=f"r{n}",
                    status=status,
                    attempts=1,
                    run=1,
                    verdict=None if verdict is None else verdict.value,
                    score=None,
                    report=None if verdict is None else _report(verdict, codes),
                    created_at=day0 + offset,
                )
            )
        session.add(
            Submission(
                id="other",
                problem_id="another-problem",
                mode="submit",
                code="-",
                code_sha256="-",
                client="ip:test",
                request_sha256="x",
                status="done",
                attempts=1,
                run=1,
                verdict="accepted",
                report=_report(Verdict.ACCEPTED, []),
                created_at=day0,
            )
        )
        session.commit()
    with sessions() as session:
        everything = problem_stats(session, PROBLEM, None, None)
        first_day = problem_stats(session, PROBLEM, None, datetime(2026, 3, 2, tzinfo=UTC))
        window = problem_stats(
            session, PROBLEM, day0 + timedelta(minutes=20), day0 + timedelta(days=1)
        )
    engine.dispose()
    assert (everything.submissions, everything.graded, everything.accepted) == (5, 4, 1)
    assert everything.acceptance_rate == 0.25
    assert [(c.code, c.count) for c in everything.diagnoses] == [("no-scale", 3), ("missing-wo", 1)]
    assert [(d.date, d.submissions, d.graded, d.accepted) for d in everything.over_time] == [
        ("2026-03-01", 2, 2, 1),
        ("2026-03-02", 3, 2, 0),
    ]
    assert everything.verdicts == {"accepted": 1, "wrong_answer": 3}
    assert (first_day.submissions, first_day.accepted) == (2, 1)
    assert (window.submissions, [(c.code, c.count) for c in window.diagnoses]) == (
        2,
        [("no-scale", 2), ("missing-wo", 1)],
    )
