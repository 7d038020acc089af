"""The causal-attention corpus: submissions in many styles (vectorised, einsum, loops, slicing),
graded through the real bwrap sandbox; each must get exactly the codes its header declares."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading import test_corpus as mha_corpus
from tests.grading.conftest import bwrap  # noqa: F401 - the real sandbox fixture

CORPUS = sorted((Path(__file__).parent / "corpus" / "causal-attention").glob("*.py"))


@pytest.fixture(scope="module")
def causal(problems: dict[str, Problem]) -> Problem:
    return problems["causal-attention"]


def test_the_worked_example_tells_the_two_alignments_apart(causal: Problem):
    (example,) = [c for c in causal.examples if c.name == "zero-scores-cache"]
    (output,) = causal.evaluate(example.inputs)
    assert np.allclose(output.ravel(), [25.0, 30.0])
    (top_left,) = causal.evaluate(example.inputs, frozenset({"upper-left-alignment"}))
    assert np.allclose(top_left.ravel(), [10.0, 15.0])


def test_an_inverted_mask_leaves_the_newest_query_nothing_to_see(causal: Problem):
    (example,) = [c for c in causal.examples if c.name == "cache"]
    with np.errstate(invalid="ignore"):  # the softmax of a row of -inf is NaN: that is the point
        (output,) = causal.evaluate(example.inputs, frozenset({"future-only"}))
    assert np.isnan(output[..., -1, :]).all()
    assert np.isfinite(output[..., :-1, :]).all()


def test_corpus_covers_every_fault_alone_pairs_and_three_styles_of_correct(causal: Problem):
    model = causal.diagnostics.error_model  # type: ignore[union-attr]
    sets = [mha_corpus.expected_codes(p) for p in CORPUS]
    assert len(CORPUS) >= 12
    assert sum(1 for s in sets if not s) >= 3
    assert {s[0] for s in sets if len(s) == 1} >= set(model.faults)
    assert sum(1 for s in sets if len(s) == 2) >= 3


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_submission_gets_exactly_its_codes(
    causal: Problem,
    bwrap: Sandbox,  # noqa: F811
    path: Path,
):
    mha_corpus.test_corpus_submission_gets_exactly_its_codes(causal, bwrap, path)
