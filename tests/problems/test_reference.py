"""The reference agrees with an independent per-head loop, and the built-in cases are sound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.problems.loader import Problem


def per_head_loop(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    """From the formula, one head and one query at a time; shares no code with the reference."""
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads
    out = np.zeros((batch, n_q, d_model))
    for b in range(batch):
        q, k, v = Q[b] @ W_q, K[b] @ W_k, V[b] @ W_v
        concat = np.zeros((n_q, d_model))
        for h in range(num_heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            for i in range(n_q):
                scores = [float(q[i, cols] @ k[j, cols]) / math.sqrt(d_k) for j in range(len(k))]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                concat[i, cols] = sum(w / total * v[j, cols] for j, w in enumerate(weights))
        out[b] = concat @ W_o
    return out


@pytest.mark.parametrize(
    ("batch", "n_q", "n_k", "d_model", "num_heads"),
    [(1, 3, 3, 4, 2), (2, 4, 7, 12, 3), (3, 6, 2, 8, 8), (2, 5, 5, 6, 1), (1, 2, 9, 16, 4)],
)
def test_reference_matches_per_head_loop(mha: Problem, batch, n_q, n_k, d_model, num_heads):
    rng = np.random.default_rng(batch * 1000 + n_q * 100 + n_k * 10 + num_heads)
    Q = rng.standard_normal((batch, n_q, d_model))
    K = rng.standard_normal((batch, n_k, d_model))
    V = rng.standard_normal((batch, n_k, d_model))
    Ws = [rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]
    got = mha.reference(Q, K, V, *Ws, num_heads)
    want = per_head_loop(Q, K, V, *Ws, num_heads)
    assert got.shape == (batch, n_q, d_model)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_reference_matches_worked_example_in_statement(mha: Problem):
    eye = np.eye(2)
    Q = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    V = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    got = mha.reference(Q, Q, V, eye, eye, eye, eye, 2)
    np.testing.assert_allclose(got, [[[1.538, 3.0], [2.0, 3.462]]], atol=5e-4)
    assert "[[[1.538, 3.0], [2.0, 3.462]]]" in mha.statement_markdown


def test_reference_does_not_modify_inputs(mha: Problem):
    case = mha.hidden[0]
    before = {k: np.copy(v) for k, v in case.inputs.items()}
    mha.solve(case.inputs)
    for name, value in case.inputs.items():
        np.testing.assert_array_equal(value, before[name])


def _scores(inputs) -> np.ndarray:
    h = inputs["num_heads"]
    batch, n_q, d = inputs["Q"].shape
    d_k = d // h
    q = (inputs["Q"] @ inputs["W_q"]).reshape(batch, n_q, h, d_k).transpose(0, 2, 1, 3)
    k = (inputs["K"] @ inputs["W_k"]).reshape(batch, -1, h, d_k).transpose(0, 2, 1, 3)
    return q @ k.transpose(0, 1, 3, 2) / math.sqrt(d_k)


def test_hidden_cases_are_not_degenerate(mha: Problem):
    ordinary = [c for c in mha.hidden if c.name != "large-magnitude"]
    assert len(ordinary) >= 8
    for case in mha.hidden:
        _, n_q, _ = case.inputs["Q"].shape
        n_k = case.inputs["K"].shape[1]
        assert case.inputs["num_heads"] >= 2, case.name
        assert n_q >= 2 and n_k >= 2, case.name
        assert case.expected is not None and np.all(np.isfinite(case.expected))
    assert any(c.inputs["Q"].shape[1] != c.inputs["K"].shape[1] for c in mha.hidden)
    assert any(c.inputs["Q"].shape[0] > 1 for c in mha.hidden)
    for case in ordinary:
        # Well-conditioned: no head's softmax is close to one-hot.
        assert np.abs(_scores(case.inputs)).max() < 20, case.name


def test_large_magnitude_case_overflows_an_unstable_softmax(mha: Problem):
    (case,) = [c for c in mha.hidden if c.name == "large-magnitude"]
    with np.errstate(over="ignore", invalid="ignore"):
        unstable = np.exp(_scores(case.inputs))
    assert not np.all(np.isfinite(unstable / unstable.sum(axis=-1, keepdims=True)))


def test_hidden_cases_are_deterministic(mha: Problem, problems: dict[str, Problem]):
    from app.core.config import REPO_ROOT
    from app.problems.loader import load_problem

    again = load_problem(REPO_ROOT / "problems" / "multi-head-attention")
    for a, b in zip(mha.hidden, again.hidden, strict=True):
        assert a.name == b.name
        np.testing.assert_array_equal(a.inputs["Q"], b.inputs["Q"])
