"""The softmax-backward corpus: submissions in many styles (vectorised, einsum, loops, a Jacobian
per slice), faults alone and in pairs, each graded through the real bwrap sandbox with the same
rules as the multi-head attention corpus: exactly the codes its header declares, and the
requirements those codes break (and only those) failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox, as a fixture here)
from tests.grading.test_corpus import expected_codes
from tests.grading.test_corpus import (
    test_corpus_submission_gets_exactly_its_codes as graded_exactly,
)

PROBLEM = "softmax-backward"
CORPUS = sorted((Path(__file__).parent / "corpus" / PROBLEM).glob("*.py"))


@pytest.fixture(scope="module")
def problem(problems: dict[str, Problem]) -> Problem:
    return problems[PROBLEM]


def test_corpus_has_every_fault_alone_in_pairs_and_three_correct_styles(problem: Problem):
    model = problem.diagnostics.error_model  # type: ignore[union-attr]
    sets = [expected_codes(p) for p in CORPUS]
    assert len(CORPUS) >= 12
    assert sum(1 for s in sets if not s) >= 3
    assert {s[0] for s in sets if len(s) == 1} >= set(model.faults)
    assert sum(1 for s in sets if len(s) == 2) >= 3


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_submission_gets_exactly_its_codes(
    problem: Problem,
    bwrap: Sandbox,  # noqa: F811
    path: Path,
):
    graded_exactly(problem, bwrap, path)
