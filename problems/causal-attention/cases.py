"""Test cases for causal attention: public examples and a seeded generator of hidden ones."""

import numpy as np

from app.problems.cases import InvalidCase, TestCase
from app.problems.helpers import qkv
from app.problems.hooks import CaseWarning


def check_case(inputs, dims):
    if dims["n_k"] < dims["n_q"]:
        raise InvalidCase(
            "k",
            f"n_k={dims['n_k']} is smaller than n_q={dims['n_q']}: the queries are the last "
            f"positions of the keys",
        )


def _case(name, rng, lead, n_q, n_k, d, visibility="hidden"):
    # Entries of order one over sqrt(sqrt(d)) keep the scaled scores of order one.
    return TestCase(
        name=name, visibility=visibility, inputs=qkv(rng, lead, n_q, n_k, d, scale=d**-0.25)
    )


def _uniform_scores():
    """The statement's worked example: q = 0 makes every score 0, so each query averages the
    values it may see. The last two of five positions are the queries."""
    return TestCase(
        name="zero-scores-cache",
        visibility="public",
        inputs={
            "q": np.zeros((2, 1)),
            "k": np.arange(1.0, 6.0).reshape(5, 1),
            "v": np.array([10.0, 20.0, 30.0, 40.0, 50.0]).reshape(5, 1),
        },
    )


def public_examples():
    rng = np.random.default_rng(15)
    return [
        _uniform_scores(),
        _case("self-attention", rng, (1,), 3, 3, 2, visibility="public"),
        _case("cache", rng, (2, 2), 2, 4, 3, visibility="public"),
    ]


def hidden_cases(rng):
    shapes = [
        # name, leading axes, n_q, n_k, d
        ("square-4", (), 4, 4, 4),
        ("square-batch", (3,), 6, 6, 8),
        ("one-query", (2,), 1, 7, 4),
        ("one-query-one-key", (1,), 1, 1, 3),
        ("cache-3-of-5", (2,), 3, 5, 4),
        ("cache-4-of-9", (), 4, 9, 6),
        ("cache-heads", (2, 4), 5, 12, 8),
        ("long-prefix", (1,), 3, 16, 4),
    ]
    return [_case(name, rng, *shape) for name, *shape in shapes]


def case_warnings(inputs, dims):
    """Cases that cannot show where the queries sit, or hide the scale."""
    found = []
    if dims["n_q"] == dims["n_k"]:
        found.append(
            CaseWarning(
                code="no-cache",
                message="n_q = n_k: with no cached positions, aligning the mask to the first "
                "key gives the same answer as aligning it to the last, so that mistake goes "
                "unnoticed.",
                about=("n_q", "n_k"),
            )
        )
    if dims["n_k"] == 1:
        found.append(
            CaseWarning(
                code="one-key",
                message="n_k = 1: a softmax over one key is always 1, so masking and scaling "
                "mistakes go unnoticed.",
                about=("n_k",),
            )
        )
    return found
