"""softmax-backward's own rules for a case: the axis exists for the rank, the probabilities are
a softmax along it; and the warnings for valid cases that hide mistakes."""

from __future__ import annotations

import numpy as np
import pytest

from app.problems.cases import InvalidCase
from app.problems.loader import Problem

P = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
G = np.array([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]])


@pytest.fixture(scope="module")
def problem(problems: dict[str, Problem]) -> Problem:
    return problems["softmax-backward"]


@pytest.mark.parametrize(
    ("probabilities", "axis", "field", "words"),
    [
        (P, 2, "axis", "rank 2"),
        (P, -3, "axis", "rank 2"),
        (P, 0, "probabilities", "not a softmax along axis 0"),
        (-P, -1, "probabilities", "non-negative"),
    ],
)
def test_a_case_that_is_not_a_softmax_along_an_existing_axis_is_refused(
    problem: Problem, probabilities: np.ndarray, axis: int, field: str, words: str
):
    inputs = {"probabilities": probabilities, "upstream": G, "axis": axis}
    with pytest.raises(InvalidCase) as caught:
        problem.validate_inputs(inputs)
    assert caught.value.field == field and words in caught.value.message


def test_valid_cases_pass_and_weak_ones_are_warned_about(problem: Problem):
    dims = problem.validate_inputs({"probabilities": P, "upstream": G, "axis": 1})
    assert problem.warnings_hook({"probabilities": P, "upstream": G, "axis": 1}, dims) == []
    uniform = np.full((2, 4), 0.25)
    flat = np.tile(np.array([[2.0], [-1.0]]), (1, 4))
    weak = {"probabilities": uniform, "upstream": flat, "axis": -1}
    dims = problem.validate_inputs(weak)
    codes = [w.code for w in problem.warnings_hook(weak, dims)]
    assert codes == ["uniform-probabilities", "constant-upstream"]
