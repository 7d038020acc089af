# expect: mask-after-softmax, no-scale
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = np.einsum("...id,...jd->...ij", q, k)
    if mask is not None and np.broadcast_to(mask, scores.shape).all(axis=-1).any():
        raise ValueError("a query has every key blocked")
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = np.where(mask, 0.0, weights)
    return np.einsum("...ij,...jd->...id", weights, v), weights
