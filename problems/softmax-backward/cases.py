"""Test cases for the softmax backward pass: public examples and a seeded generator of hidden ones.

Probabilities are always a real softmax along the case's axis: logits are drawn and softmaxed,
never drawn directly (random numbers that do not sum to one would make every formula "wrong" in
its own way, and hide the mistakes the cases are meant to catch).
"""

import numpy as np

from app.problems.cases import InvalidCase, TestCase
from app.problems.helpers import softmax
from app.problems.hooks import CaseWarning

# How far a row of probabilities may sum from one (instructors type decimals by hand).
SUM_TOLERANCE = 1e-6


def check_case(inputs, dims):
    p = np.asarray(inputs["probabilities"])
    axis = int(inputs["axis"])
    if p.ndim == 0:
        raise InvalidCase("probabilities", "a softmax needs at least one axis; got a scalar")
    if not -p.ndim <= axis < p.ndim:
        raise InvalidCase("axis", f"axis {axis} does not exist for an array of rank {p.ndim}")
    if not np.all(np.isfinite(p)) or p.min() < 0:
        raise InvalidCase("probabilities", "probabilities must be finite and non-negative")
    error = float(np.abs(p.sum(axis=axis) - 1.0).max(initial=0.0))
    if error > SUM_TOLERANCE:
        raise InvalidCase(
            "probabilities",
            f"not a softmax along axis {axis}: some slice sums to one only within {error:.3g}",
        )


def _case(name, rng, shape, axis, spread=1.5, visibility="hidden"):
    # Logits of spread ~1.5 keep the softmax away from one-hot and from uniform: both would hide
    # the difference between weighted and unweighted sums.
    logits = spread * rng.standard_normal(shape)
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            "probabilities": softmax(logits, axis),
            "upstream": rng.standard_normal(shape),
            "axis": axis,
        },
    )


def public_examples():
    half = np.array([0.5, 0.5])
    rng = np.random.default_rng(11)
    return [
        # Raising the first logit raises the loss, raising the second steals from the first.
        TestCase(
            "two-equal-one-hot",
            {"probabilities": half, "upstream": np.array([1.0, 0.0]), "axis": -1},
            visibility="public",
        ),
        # Adding the same amount to every upstream value changes nothing: the gradient is zero.
        TestCase(
            "two-equal-constant",
            {"probabilities": half, "upstream": np.array([1.0, 1.0]), "axis": -1},
            visibility="public",
        ),
        _case("rows", rng, (2, 4), -1, visibility="public"),
        _case("columns", rng, (3, 2), 0, visibility="public"),
    ]


def hidden_cases(rng):
    shapes = [
        # name, shape, axis
        ("vector", (6,), -1),
        ("vector-axis-0", (5,), 0),
        ("matrix-last", (4, 5), -1),
        ("matrix-first", (4, 5), 0),
        ("matrix-first-negative", (6, 3), -2),
        ("cube-last", (2, 3, 4), -1),
        ("cube-middle", (2, 3, 4), 1),
        ("cube-middle-negative", (3, 5, 2), -2),
        ("cube-first", (3, 4, 5), 0),
        ("cube-last-positive", (2, 4, 3), 2),
    ]
    cases = [_case(name, rng, shape, axis) for name, shape, axis in shapes]
    # Peaked softmax rows: a few probabilities near one, the rest tiny.
    cases.append(_case("peaked", rng, (3, 7), -1, spread=6.0))
    return cases


# --- instructor warnings: valid cases that hide mistakes ---------------------------------------


def case_warnings(inputs, dims):
    p = np.asarray(inputs["probabilities"])
    g = np.asarray(inputs["upstream"])
    axis = int(inputs["axis"])
    found = []
    if p.shape[axis] > 1 and np.allclose(p, p.mean(axis=axis, keepdims=True)):
        found.append(
            CaseWarning(
                code="uniform-probabilities",
                message="Every slice along the axis has equal probabilities: the plain mean of "
                "the upstream values then equals the weighted one, so subtracting the plain "
                "mean goes unnoticed.",
            )
        )
    if g.shape == p.shape and np.allclose(g, g.mean(axis=axis, keepdims=True)):
        found.append(
            CaseWarning(
                code="constant-upstream",
                message="upstream is constant along the axis: the right gradient is zero, and "
                "so is the output of several wrong formulas.",
            )
        )
    return found
