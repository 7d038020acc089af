"""The grouped-query attention folder's own rules: the case relations check_case enforces, the
instructor warnings for groups that hide sharing mistakes, and which group sizes the cases and
probes use."""

from __future__ import annotations

import numpy as np
import pytest

from app.problems.cases import InvalidCase
from app.problems.loader import Problem
from app.testcases.warnings import case_warnings


@pytest.fixture(scope="module")
def gqa(problems: dict[str, Problem]) -> Problem:
    return problems["grouped-query-attention"]


def inputs(d_model: int = 8, num_heads: int = 4, num_kv_heads: int = 2, d_kv: int = 4):
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((2, 3, d_model)),
        "W_q": rng.standard_normal((d_model, d_model)),
        "W_k": rng.standard_normal((d_model, d_kv)),
        "W_v": rng.standard_normal((d_model, d_kv)),
        "W_o": rng.standard_normal((d_model, d_model)),
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
    }


@pytest.mark.parametrize(
    ("sizes", "field", "words"),
    [
        ({"d_model": 9, "num_heads": 4, "d_kv": 4}, "num_heads", "not divisible by num_heads"),
        ({"num_heads": 4, "num_kv_heads": 3, "d_kv": 6}, "num_kv_heads", "not divisible"),
        ({"d_kv": 6}, "W_k", "num_kv_heads * d_k = 2 * 2 = 4"),
    ],
)
def test_check_case_names_the_field_of_a_broken_relation(
    gqa: Problem, sizes: dict[str, int], field: str, words: str
):
    with pytest.raises(InvalidCase) as raised:
        gqa.validate_inputs(inputs(**sizes))
    assert raised.value.field == field
    assert words in raised.value.message


def test_a_valid_case_binds_the_key_width_as_its_own_dimension(gqa: Problem):
    dims = gqa.validate_inputs(inputs())
    assert dims["d_kv"] == 4 and dims["d_model"] == 8


@pytest.mark.parametrize("num_kv_heads", [1, 4])
def test_trivial_groups_warn_and_proper_groups_do_not(gqa: Problem, num_kv_heads: int):
    case = inputs(num_kv_heads=num_kv_heads, d_kv=2 * num_kv_heads)
    dims = gqa.validate_inputs(case)
    codes = [w.code for w in case_warnings(gqa, case, dims, gqa.solve(case))]
    assert "trivial-groups" in codes
    # num_kv_heads = 1 is covered by that warning, not repeated as a unit dimension.
    assert "unit-dimension" not in codes
    proper = inputs()
    proper_dims = gqa.validate_inputs(proper)
    assert "trivial-groups" not in [
        w.code for w in case_warnings(gqa, proper, proper_dims, gqa.solve(proper))
    ]


def test_cases_include_multi_query_and_plain_multi_head_and_probes_proper_groups(gqa: Problem):
    def groups(items):
        return {(c.inputs["num_heads"], c.inputs["num_kv_heads"]) for c in items}

    graded = groups(gqa.examples + gqa.hidden)
    assert any(kv == 1 < h for h, kv in graded)
    assert any(kv == h > 1 for h, kv in graded)
    probes = [p for p in gqa.diagnostics.probes if p.purpose == "fault"]  # type: ignore[union-attr]
    assert probes and all(1 < kv < h for h, kv in groups(probes))
    # Groups of two and of three, so a wrong group size cannot pass for the right one.
    assert {h // kv for h, kv in groups(probes)} >= {2, 3}
