"""Reference solution. Trusted code: runs only in the grader, never in a sandbox, never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``): each flag changes
one step. The plain call, with no flags, is the correct solution.
"""

import numpy as np

# Every flag this function understands; the loader checks faults.toml names exactly these.
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
        # Idioms (faults.toml [idioms]): other ways of writing the correct step.
        "fill-finite",
        "fill-added",
    }
)

# The large negative number of the finite fill idioms (masked_fill(mask, -1e9), scores + mask *
# -1e9): exp() of it beside a real score is exactly 0, so only a row with every key blocked
# tells it from -inf.
_LARGE_NEGATIVE = -1e9


def causal_attention(q, k, v, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    n_q, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]

    scale = np.sqrt(d)
    if has("no-scale"):
        scale = 1.0
    scores = q @ np.swapaxes(k, -1, -2) / scale  # (..., n_q, n_k)

    # Query i sits at position n_k - n_q + i of the sequence; key j at position j.
    offset = 0 if has("upper-left-alignment") else n_k - n_q
    position = np.arange(n_q)[:, None] + offset
    key = np.arange(n_k)[None, :]
    if has("no-mask") or (has("mask-dropped-with-cache") and n_k > n_q):
        allowed = np.ones((n_q, n_k), dtype=bool)
    elif has("diagonal-blocked"):
        allowed = key < position
    elif has("future-only"):
        allowed = key > position
    elif has("future-and-present"):  # np.triu(..., k=0): the other side, diagonal included
        allowed = key >= position
    else:
        allowed = key <= position

    if has("future-scores-zeroed"):  # a score of 0 still gets weight e^0 / sum
        scores = np.where(allowed, scores, 0.0)
    elif has("mask-after-softmax"):
        pass
    elif has("fill-added"):  # a fully blocked row keeps its scores: the shift cancels
        scores = scores + np.where(allowed, 0.0, _LARGE_NEGATIVE)
    elif has("fill-finite"):  # a fully blocked row comes out uniform instead of NaN
        scores = np.where(allowed, scores, _LARGE_NEGATIVE)
    else:
        scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    if has("mask-after-softmax"):
        weights = weights * allowed
    return weights @ v
