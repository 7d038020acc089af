"""The masked-attention corpus: submissions in several styles (vectorised, einsum, loops), each
mistake alone, in pairs and a triple, graded through the real bwrap sandbox; each must get
exactly the codes of its ``# expect:`` header."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from sandbox.verdicts import Verdict
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)
from tests.grading.test_corpus import PARTIAL, expected_codes, header

PROBLEM = "masked-attention"
CORPUS = sorted((Path(__file__).parent / "corpus" / PROBLEM).glob("*.py"))


@pytest.fixture(scope="module")
def problem(problems: dict[str, Problem]) -> Problem:
    return problems[PROBLEM]


def test_corpus_covers_every_fault_and_three_correct_styles(problem: Problem):
    model = problem.diagnostics.error_model  # type: ignore[union-attr]
    sets = [expected_codes(p) for p in CORPUS]
    assert len(CORPUS) >= 12
    assert sum(1 for s in sets if not s) >= 3
    assert {s[0] for s in sets if len(s) == 1} >= set(model.faults)
    assert sum(1 for s in sets if len(s) >= 2) >= 3


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_submission_gets_exactly_its_codes(
    problem: Problem,
    bwrap: Sandbox,  # noqa: F811
    path: Path,
):
    want = expected_codes(path)
    report = grade_submission(problem, path.read_text(), bwrap)
    got = sorted(d.code for d in report.diagnoses)
    assert got == want, (report.verdict, report.error, [t.message for t in report.tests][:3])
    statuses = {r.id: r.status for r in report.requirements}
    assert list(statuses) == [r.id for r in problem.spec.requirements]
    if not want:
        assert report.verdict == Verdict.ACCEPTED
        assert report.score == 1.0
        assert set(statuses.values()) == {"passed"}
        return
    assert report.verdict == Verdict.WRONG_ANSWER
    assert report.score < 1.0
    assert not report.alternatives
    model = problem.diagnostics.error_model  # type: ignore[union-attr]
    broken = {model.faults[c].requirement for c in want if c in model.faults}
    failed = {r for r, s in statuses.items() if s == "failed"}
    assert failed == broken | set(header(path, "implicates") or [])
    if PARTIAL & set(want):
        assert all(s == "not_checked" for r, s in statuses.items() if r not in failed)
    else:
        assert all(s == "passed" for r, s in statuses.items() if r not in failed)
    for diagnosis in report.diagnoses:
        assert diagnosis.title and diagnosis.explanation and diagnosis.hint and diagnosis.evidence
        assert diagnosis.certain
