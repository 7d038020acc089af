"""causal-attention's worked example and its NaN-producing fault, on the reference itself."""

from __future__ import annotations

import numpy as np
import pytest

from app.problems.loader import Problem


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
