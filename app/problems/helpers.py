"""Helpers every problem folder may import (``from app.problems.helpers import close``): the
comparison its property checks use, and the input generators attention-like problems share.
Each draws from ``rng`` in a fixed order, so a folder's seeded cases stay the same."""

from __future__ import annotations

from typing import Any

import numpy as np


def close(
    actual: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-9, scaled: bool = True
) -> bool:
    """``np.allclose`` for a property check; ``scaled`` makes ``atol`` grow with the largest
    magnitude of ``expected`` (at least 1), so large outputs are not held to an absolute 1e-9."""
    expected = np.asarray(expected)
    if scaled:
        atol *= max(1.0, float(np.abs(expected).max(initial=0.0)))
    return bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


def softmax(logits: np.ndarray, axis: int) -> np.ndarray:
    """A stable softmax along ``axis``."""
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    result: np.ndarray = shifted / shifted.sum(axis=axis, keepdims=True)
    return result


def qkv(
    rng: np.random.Generator,
    lead: tuple[int, ...],
    n_q: int,
    n_k: int,
    d_k: int,
    d_v: int | None = None,
    scale: float = 1.0,
) -> dict[str, np.ndarray]:
    """Queries, keys and values with leading axes ``lead``, standard normal; ``scale`` multiplies
    q and k (``d_k ** -0.25`` keeps scores scaled by sqrt(d_k) of order one)."""
    return {
        "q": scale * rng.standard_normal((*lead, n_q, d_k)),
        "k": scale * rng.standard_normal((*lead, n_k, d_k)),
        "v": rng.standard_normal((*lead, n_k, d_k if d_v is None else d_v)),
    }


def projection(rng: np.random.Generator, d_in: int, d_out: int) -> np.ndarray:
    """A weight matrix of entries ~ N(0, 1/d_in): a projection of inputs of order one stays of
    order one (a softmax over its scores neither saturated nor flat)."""
    w = 1.0 / np.sqrt(d_in)
    result: np.ndarray = w * rng.standard_normal((d_in, d_out))
    return result
