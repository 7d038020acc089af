# expect: assumes-2d-inputs, no-scale
# Written for one (n, d) sequence: k.T transposes every axis, so 3-D and 4-D inputs fail; and
# the scores are not scaled.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ k.T
    if mask is not None:
        if np.broadcast_to(mask, scores.shape).all(axis=-1).any():
            raise ValueError("a query has no key")
        scores = np.where(mask, -np.inf, scores)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v, w
