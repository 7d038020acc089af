"""Warnings for cases that are valid but weak for diagnosis. They never block a case.

Rules (documented in docs/instructors.md):

- ``single-head``: ``num_heads == 1``: every way of splitting and merging heads agrees.
- ``length-one-sequence``: ``n_q == 1`` or ``n_k == 1``: with one key the softmax is 1 whatever
  the scores, so scaling mistakes vanish; with one query, the softmax axis is hard to see.
- ``unit-dimension``: another symbolic dimension (not ``batch``) is 1.
- ``saturated-softmax``: in at least half of the (batch, head, query) rows the largest attention
  weight exceeds 0.99: the softmax is nearly one-hot, so the scale of the scores hardly matters.
  (One saturated row hides nothing: the other rows still show a mistake.)
- ``integer-valued``: an array input holds only whole numbers: exact arithmetic hides float32
  work, and ties make different mistakes agree.
- ``misses-faults``: some known mistakes of the problem's error model give the right answer on
  this case, so a student who makes only those mistakes passes it. Mistakes that most of the
  problem's built-in cases miss too are left out: they need a dedicated case (an unstable
  softmax only shows on huge scores).
"""

from __future__ import annotations

import threading

import numpy as np
from pydantic import BaseModel

from app.problems.cases import Inputs
from app.problems.loader import Problem

SATURATED_WEIGHT = 0.99
SATURATED_ROW_FRACTION = 0.5
_ATTENTION_PARAMS = {"Q", "K", "W_q", "W_k", "num_heads"}


class CaseWarning(BaseModel):
    code: str
    message: str


def case_warnings(
    problem: Problem, inputs: Inputs, dims: dict[str, int], expected: np.ndarray
) -> list[CaseWarning]:
    found: list[CaseWarning] = []
    for dim, size in dims.items():
        if size != 1 or dim == "batch":
            continue
        if dim == "num_heads":
            found.append(
                CaseWarning(
                    code="single-head",
                    message="num_heads = 1: every way of splitting and merging heads gives the "
                    "same answer, so head-splitting mistakes go unnoticed.",
                )
            )
        elif dim.startswith("n_"):
            found.append(
                CaseWarning(
                    code="length-one-sequence",
                    message=f"{dim} = 1: a length-1 sequence hides scaling and softmax-axis "
                    f"mistakes (a softmax over one key is always 1).",
                )
            )
        else:
            found.append(
                CaseWarning(code="unit-dimension", message=f"{dim} = 1: a size-1 dimension.")
            )
    saturated = _saturated_fraction(problem, inputs)
    if saturated is not None and saturated >= SATURATED_ROW_FRACTION:
        found.append(
            CaseWarning(
                code="saturated-softmax",
                message=f"In {saturated:.0%} of the attention rows the largest weight exceeds "
                f"{SATURATED_WEIGHT}: the softmax is nearly one-hot, so scaling mistakes "
                f"barely change the output.",
            )
        )
    whole = [
        name
        for name, value in inputs.items()
        if isinstance(value, np.ndarray) and value.size and bool(np.all(value == np.round(value)))
    ]
    if whole:
        found.append(
            CaseWarning(
                code="integer-valued",
                message=f"Only whole numbers in {', '.join(whole)}: exact arithmetic hides "
                f"low-precision work and ties make different mistakes agree.",
            )
        )
    special = _special_purpose(problem)
    missed = [c for c in _missed_faults(problem, inputs, expected) if c not in special]
    if missed:
        found.append(
            CaseWarning(
                code="misses-faults",
                message=f"These mistakes give the right answer on this case: {', '.join(missed)}.",
            )
        )
    return found


def _saturated_fraction(problem: Problem, inputs: Inputs) -> float | None:
    """The attention's row-wise largest weight, computed from the statement's definition."""
    if not set(inputs) >= _ATTENTION_PARAMS:
        return None
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


def _missed_faults(problem: Problem, inputs: Inputs, expected: np.ndarray) -> list[str]:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        return []
    tolerance = problem.spec.tolerance
    names = [p.name for p in problem.spec.params]
    missed: list[str] = []
    model = diagnostics.error_model
    for code in model.faults:
        for flag in model.flags(code):
            args = [_copy(inputs[n]) for n in names]
            try:
                with np.errstate(all="ignore"):
                    out = np.asarray(
                        diagnostics.faulty_reference(*args, faults=frozenset({flag})),
                        dtype=np.float64,
                    )
            except Exception:  # a fault that cannot run on these shapes is not missed
                continue
            if out.shape == expected.shape and np.allclose(
                out, expected, rtol=tolerance.rtol, atol=tolerance.atol
            ):
                missed.append(code)
                break
    return missed


_special: dict[int, tuple[Problem, frozenset[str]]] = {}
_special_lock = threading.Lock()


def _special_purpose(problem: Problem) -> frozenset[str]:
    """Faults most of the problem's own cases miss: they need a dedicated case (e.g. an
    unstable softmax shows only on huge scores), so missing them is no fault of a case."""
    with _special_lock:
        cached = _special.get(id(problem))
        if cached is not None and cached[0] is problem:
            return cached[1]
    cases = [c for c in problem.examples + problem.hidden if c.expected is not None]
    counts: dict[str, int] = {}
    for case in cases:
        assert case.expected is not None
        for code in _missed_faults(problem, case.inputs, case.expected):
            counts[code] = counts.get(code, 0) + 1
    found = frozenset(code for code, n in counts.items() if 2 * n > len(cases))
    with _special_lock:
        _special[id(problem)] = (problem, found)
    return found


def _copy(value: object) -> object:
    return value.copy() if isinstance(value, np.ndarray) else value
