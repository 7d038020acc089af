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
        "fill-finite",
        "fill-added",
    }
)

# The finite fill of masked_fill(mask, -1e9) and of an additive mask (mask * -1e9).
_LARGE_NEGATIVE = -1e9
# The "tiny positive" habit's fill: 1e-9 where -1e9 was meant.
_TINY = 1e-9


def masked_attention(q, k, v, mask=None, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    scale = math.sqrt(q.shape[-1])
    if has("no-scale"):
        scale = 1.0
    elif has("scale-dv"):
        scale = math.sqrt(v.shape[-1])
    elif has("scale-dk-not-sqrt"):
        scale = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / scale
    lenient = has("accepts-empty-row")
    if mask is not None and not lenient and torch.broadcast_to(mask, scores.shape).all(-1).any():
        raise ValueError("the mask blocks every key of some query")
    if has("mask-ignored"):  # checked, then never applied
        mask = None
    if mask is not None:
        if has("mask-inverted"):  # a mask read as "where to attend"
            mask = ~mask
        if has("mask-added-as-number"):  # True counts as +1
            scores = scores + mask
        elif has("mask-fill-tiny"):  # -1e-9 misread as 1e-9
            scores = scores.masked_fill(mask, _TINY)
        elif has("mask-after-softmax"):
            pass
        elif has("fill-added"):  # an additive mask
            scores = scores + mask.to(scores.dtype) * _LARGE_NEGATIVE
        elif has("fill-finite"):
            scores = scores.masked_fill(mask, _LARGE_NEGATIVE)
        else:
            scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2 if has("softmax-wrong-axis") else -1)
    if mask is not None and has("mask-after-softmax"):
        weights = weights.masked_fill(mask, 0.0)
    if has("weights-before-softmax"):
        return weights @ v, scores
    return weights @ v, weights
