"""Test cases for multi-head attention: public examples and a seeded generator of hidden ones."""

import numpy as np

from app.problems.cases import InvalidCase, TestCase
from app.problems.helpers import projection
from app.problems.hooks import CaseWarning


def check_case(inputs, dims):
    if dims["d_model"] % dims["num_heads"] != 0:
        raise InvalidCase(
            "num_heads",
            f"d_model={dims['d_model']} is not divisible by num_heads={dims['num_heads']}",
        )


def _case(name, rng, batch, n_q, n_k, d_model, num_heads, scale=1.0, visibility="hidden"):
    # Weights ~ 1/sqrt(d_model) (projection) keep scores of order one.
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            "Q": scale * rng.standard_normal((batch, n_q, d_model)),
            "K": scale * rng.standard_normal((batch, n_k, d_model)),
            "V": rng.standard_normal((batch, n_k, d_model)),
            "W_q": projection(rng, d_model, d_model),
            "W_k": projection(rng, d_model, d_model),
            "W_v": projection(rng, d_model, d_model),
            "W_o": projection(rng, d_model, d_model),
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


# --- instructor warnings: valid cases that hide mistakes ---------------------------------------

SATURATED_WEIGHT = 0.99
SATURATED_ROW_FRACTION = 0.5


def case_warnings(inputs, dims):
    """Single head, length-1 sequences, a saturated softmax (see the statement's pitfalls)."""
    found = []
    if dims["num_heads"] == 1:
        found.append(
            CaseWarning(
                code="single-head",
                message="num_heads = 1: every way of splitting and merging heads gives the "
                "same answer, so head-splitting mistakes go unnoticed.",
                about=("num_heads",),
            )
        )
    for dim in ("n_q", "n_k"):
        if dims[dim] == 1:
            found.append(
                CaseWarning(
                    code="length-one-sequence",
                    message=f"{dim} = 1: a length-1 sequence hides scaling and softmax-axis "
                    f"mistakes (a softmax over one key is always 1).",
                    about=(dim,),
                )
            )
    saturated = saturated_fraction(inputs)
    if saturated >= SATURATED_ROW_FRACTION:
        found.append(
            CaseWarning(
                code="saturated-softmax",
                message=f"In {saturated:.0%} of the attention rows the largest weight exceeds "
                f"{SATURATED_WEIGHT}: the softmax is nearly one-hot, so scaling mistakes "
                f"barely change the output.",
            )
        )
    return found


def saturated_fraction(inputs):
    """The share of (batch, head, query) rows whose largest attention weight exceeds
    SATURATED_WEIGHT, computed from the statement's definition. (One saturated row hides
    nothing: the other rows still show a mistake.)"""
    Q, K, W_q, W_k = (np.asarray(inputs[n]) for n in ("Q", "K", "W_q", "W_k"))
    heads = int(inputs["num_heads"])
    batch, n_q, d_model = Q.shape
    n_k = K.shape[1]
    d_k = d_model // heads
    q = (Q @ W_q).reshape(batch, n_q, heads, d_k).transpose(0, 2, 1, 3)
    k = (K @ W_k).reshape(batch, n_k, heads, d_k).transpose(0, 2, 1, 3)
    with np.errstate(all="ignore"):
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
    peak = np.nan_to_num(weights.max(axis=-1), nan=1.0)
    return float(np.mean(peak > SATURATED_WEIGHT))
