"""The masked-attention corpus: submissions in several styles (vectorised, einsum, loops), each
mistake alone, in pairs and a triple, graded through the real bwrap sandbox; each must get
exactly the codes of its ``# expect:`` header, by the rule of the multi-head attention corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)
from tests.grading.test_corpus import assert_exact_codes, expected_codes

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
    assert_exact_codes(problem, path, grade_submission(problem, path.read_text(), bwrap))
