"""Reference for masked attention. Trusted code: runs only in the grader, never in a sandbox.

Each flag of ``faults`` switches on one misconception of ``faults.toml`` by changing one step; the
plain call is the correct solution.
"""

import numpy as np

FAULTS = frozenset(
    {
        "no-scale",
        "scale-dv",
        "scale-dk-not-sqrt",
        "mask-fill-tiny",
        "mask-after-softmax",
        "mask-added-as-number",
        "mask-ignored",
        "mask-inverted",
        "softmax-wrong-axis",
        "weights-before-softmax",
        "accepts-empty-row",
        # Idioms (faults.toml [idioms]): other ways of writing the correct step.
        "fill-finite",
        "fill-added",
    }
)

# The blocked score of the finite fill idioms (masked_fill(mask, -1e9), scores + mask * -1e9):
# exp() of it beside a real score is exactly 0, so only a row with every key blocked tells it
# from -inf (uniform weights when it replaces the scores, their softmax when it is added).
_LARGE_NEGATIVE = -1e9
# The "tiny positive" habit's fill: 1e-9 where -1e9 was meant.
_TINY = 1e-9


def masked_attention(q, k, v, mask=None, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    lenient = has("accepts-empty-row")
    d_k, d_v = q.shape[-1], v.shape[-1]
    scores_shape = (*q.shape[:-1], k.shape[-2])
    if mask is not None and not lenient and np.broadcast_to(mask, scores_shape).all(axis=-1).any():
        raise ValueError("the mask blocks every key of some query")

    scale = np.sqrt(d_k)
    if has("no-scale"):
        scale = 1.0
    elif has("scale-dv"):
        scale = np.sqrt(d_v)
    elif has("scale-dk-not-sqrt"):
        scale = float(d_k)
    scores = q @ np.swapaxes(k, -1, -2) / scale

    blocked = None
    if mask is not None and not has("mask-ignored"):
        blocked = ~mask if has("mask-inverted") else mask
    if blocked is not None and has("mask-added-as-number"):
        scores = scores + blocked
    elif blocked is not None and has("mask-fill-tiny"):
        # -1e-9 misread as 1e-9: a blocked key gets a score of about 0, so still e^0 of weight.
        scores = np.where(blocked, _TINY, scores)
    elif blocked is not None and not has("mask-after-softmax"):
        if has("fill-added"):
            scores = scores + np.where(blocked, _LARGE_NEGATIVE, 0.0)
        else:
            scores = np.where(blocked, _LARGE_NEGATIVE if has("fill-finite") else -np.inf, scores)

    axis = -2 if has("softmax-wrong-axis") else -1
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    weights = weights / weights.sum(axis=axis, keepdims=True)
    if blocked is not None and has("mask-after-softmax"):
        weights = np.where(blocked, 0.0, weights)
    output = weights @ v
    if has("weights-before-softmax"):
        return output, np.broadcast_to(scores, weights.shape).copy()
    return output, weights
