"""The PyTorch reference: a correct solution written as a student would (tensors in, a tensor
out), with the fault flags of reference.py written in PyTorch's own idiom. Trusted: never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``) exactly as it does
for reference.py; the plain call is the correct solution. ``problems check`` grades the plain call
and every single fault and pair in the sandbox as PyTorch jobs, and each PyTorch habit of
faults.toml ([habits]) is a few edits of the plain call's lines.
"""

import math

import torch

# The flags of reference.py, every one written here too (``problems check`` compares them).
FAULTS = frozenset(
    {
        "upper-left-alignment",
        "no-mask",
        "diagonal-blocked",
        "future-only",
        "future-and-present",
        "mask-after-softmax",
        "future-scores-zeroed",
        "no-scale",
        "mask-dropped-with-cache",
        "fill-finite",
        "fill-added",
    }
)

# The finite fill of masked_fill(mask, -1e9) and of an additive mask (mask * -1e9).
_LARGE_NEGATIVE = -1e9


def causal_attention(q, k, v, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    n_q, n_k = q.shape[-2], k.shape[-2]
    scale = 1.0 if has("no-scale") else math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) / scale

    # The queries are the last n_q of n_k positions: torch.triu's diagonal counts from the
    # top-left corner, so the blocked triangle starts n_k - n_q + 1 columns to the right.
    ones = torch.ones(n_q, n_k, dtype=torch.bool)
    if has("no-mask") or (has("mask-dropped-with-cache") and n_k > n_q):
        blocked = None
    elif has("upper-left-alignment"):  # is_causal=True's top-left triangle
        blocked = ones.triu(diagonal=1)
    elif has("diagonal-blocked"):
        blocked = ones.triu(diagonal=n_k - n_q)
    elif has("future-only"):  # the kept triangle blocked instead
        blocked = ones.tril(diagonal=n_k - n_q)
    elif has("future-and-present"):
        blocked = ones.tril(diagonal=n_k - n_q - 1)
    else:
        blocked = torch.ones(n_q, n_k, dtype=torch.bool).triu(diagonal=n_k - n_q + 1)

    if blocked is None or has("mask-after-softmax"):
        pass
    elif has("future-scores-zeroed"):  # a score of 0 still gets weight e^0 / sum
        scores = scores.masked_fill(blocked, 0.0)
    elif has("fill-added"):  # an additive mask: a fully blocked row keeps its scores
        scores = scores + blocked.to(scores.dtype) * _LARGE_NEGATIVE
    elif has("fill-finite"):  # a fully blocked row comes out uniform instead of NaN
        scores = scores.masked_fill(blocked, _LARGE_NEGATIVE)
    else:
        scores = scores.masked_fill(blocked, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if blocked is not None and has("mask-after-softmax"):
        weights = weights.masked_fill(blocked, 0.0)
    return weights @ v
