"""Test cases for multi-head attention: public examples and a seeded generator of hidden ones."""

import numpy as np

from app.problems.cases import CaseError, TestCase


def check_case(inputs, dims):
    if dims["d_model"] % dims["num_heads"] != 0:
        raise CaseError(
            "num_heads",
            f"d_model={dims['d_model']} is not divisible by num_heads={dims['num_heads']}",
        )


def _case(name, rng, batch, n_q, n_k, d_model, num_heads, scale=1.0, visibility="hidden"):
    # Weights ~ 1/sqrt(d_model) keep scores of order one: softmax neither saturated nor flat.
    w = 1.0 / np.sqrt(d_model)
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            "Q": scale * rng.standard_normal((batch, n_q, d_model)),
            "K": scale * rng.standard_normal((batch, n_k, d_model)),
            "V": rng.standard_normal((batch, n_k, d_model)),
            "W_q": w * rng.standard_normal((d_model, d_model)),
            "W_k": w * rng.standard_normal((d_model, d_model)),
            "W_v": w * rng.standard_normal((d_model, d_model)),
            "W_o": w * rng.standard_normal((d_model, d_model)),
            "num_heads": num_heads,
        },
    )


def public_examples():
    rng = np.random.default_rng(7)
    return [
        _case("two-heads", rng, 1, 3, 3, 4, 2, visibility="public"),
        _case("cross-attention", rng, 2, 2, 4, 6, 3, visibility="public"),
    ]


def hidden_cases(rng):
    shapes = [
        # name, batch, n_q, n_k, d_model, num_heads
        ("self-2-heads", 1, 4, 4, 8, 2),
        ("self-4-heads", 2, 5, 5, 8, 4),
        ("cross-longer-keys", 2, 3, 6, 12, 3),
        ("cross-shorter-keys", 3, 7, 2, 12, 4),
        ("wide-heads", 2, 6, 9, 16, 2),
        ("many-heads", 1, 8, 5, 24, 6),
        ("batch-4", 4, 4, 3, 10, 5),
        ("d-model-32", 2, 9, 11, 32, 8),
    ]
    cases = [_case(name, rng, *shape) for name, *shape in shapes]
    # Scores reach the thousands: exp() overflows unless the softmax subtracts the row maximum.
    cases.append(_case("large-magnitude", rng, 2, 4, 5, 8, 2, scale=60.0))
    return cases
