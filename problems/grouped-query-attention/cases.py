"""Test cases for grouped-query attention: public examples and a seeded generator of hidden ones."""

import numpy as np

from app.problems.cases import InvalidCase, TestCase
from app.problems.helpers import projection
from app.problems.hooks import CaseWarning


def check_case(inputs, dims):
    heads, kv_heads, d_model = dims["num_heads"], dims["num_kv_heads"], dims["d_model"]
    if d_model % heads != 0:
        raise InvalidCase("num_heads", f"d_model={d_model} is not divisible by num_heads={heads}")
    if heads % kv_heads != 0:
        raise InvalidCase(
            "num_kv_heads", f"num_heads={heads} is not divisible by num_kv_heads={kv_heads}"
        )
    width = kv_heads * (d_model // heads)
    if dims["d_kv"] != width:  # W_k and W_v share d_kv, so one check covers both
        raise InvalidCase(
            "W_k",
            f"W_k and W_v have {dims['d_kv']} columns; they need num_kv_heads * d_k = "
            f"{kv_heads} * {d_model // heads} = {width}",
        )


def inputs_of(rng, batch, n, d_model, num_heads, num_kv_heads, scale=1.0):
    """Random inputs of the given sizes; weights ~ 1/sqrt(d_model) keep the scores of order one
    (a softmax neither saturated nor flat). ``scale`` multiplies x."""
    d_kv = num_kv_heads * (d_model // num_heads)
    return {
        "x": scale * rng.standard_normal((batch, n, d_model)),
        "W_q": projection(rng, d_model, d_model),
        "W_k": projection(rng, d_model, d_kv),
        "W_v": projection(rng, d_model, d_kv),
        "W_o": projection(rng, d_model, d_model),
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
    }


def _case(name, rng, *sizes, scale=1.0, visibility="hidden"):
    return TestCase(name=name, visibility=visibility, inputs=inputs_of(rng, *sizes, scale=scale))


def public_examples():
    rng = np.random.default_rng(15)
    return [
        # name, batch, n, d_model, num_heads, num_kv_heads
        _case("four-heads-two-groups", rng, 1, 3, 8, 4, 2, visibility="public"),
        _case("multi-query", rng, 2, 4, 6, 3, 1, visibility="public"),
    ]


def hidden_cases(rng):
    shapes = [
        # name, batch, n, d_model, num_heads, num_kv_heads
        ("groups-of-two", 1, 5, 8, 4, 2),
        ("groups-of-three", 2, 4, 12, 6, 2),
        ("three-groups", 2, 6, 12, 6, 3),
        ("groups-of-four", 1, 7, 16, 8, 2),
        ("multi-query-four-heads", 2, 5, 12, 4, 1),
        ("multi-query-wide", 1, 6, 16, 8, 1),
        ("plain-multi-head", 2, 4, 12, 3, 3),
        ("plain-multi-head-wide", 1, 5, 16, 4, 4),
        ("batch-4", 4, 3, 10, 2, 1),
        ("d-model-32", 2, 9, 32, 8, 4),
    ]
    cases = [_case(name, rng, *shape) for name, *shape in shapes]
    # Scores reach the thousands: exp() overflows unless the softmax subtracts the row maximum.
    cases.append(_case("large-magnitude", rng, 2, 4, 8, 4, 2, scale=60.0))
    return cases


# --- instructor warnings: valid cases that hide mistakes ---------------------------------------


def case_warnings(inputs, dims):
    """Groups that hide sharing mistakes, one-column heads, a length-1 sequence."""
    found = []
    heads, kv_heads = dims["num_heads"], dims["num_kv_heads"]
    if kv_heads in (1, heads):
        kind = "one key/value head" if kv_heads == 1 else "as many key/value heads as queries"
        found.append(
            CaseWarning(
                code="trivial-groups",
                message=f"num_kv_heads = {kv_heads} ({kind}): repeating and tiling the key/value "
                "heads give the same answer, so sharing mistakes go unnoticed.",
                about=("num_kv_heads", "num_heads"),
            )
        )
    if dims["d_model"] == heads:
        found.append(
            CaseWarning(
                code="one-column-heads",
                message="d_k = 1: every way of splitting the width into heads gives the same "
                "answer, so head-splitting mistakes go unnoticed.",
                about=("num_heads",),
            )
        )
    if dims["n"] == 1:
        found.append(
            CaseWarning(
                code="length-one-sequence",
                message="n = 1: a softmax over one key is always 1, so scaling and softmax-axis "
                "mistakes go unnoticed.",
                about=("n",),
            )
        )
    return found
