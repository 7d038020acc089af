# expect: scale-dv
import numpy as np


def masked_attention(q, k, v, mask=None):
    d = v.shape[-1]
    scores = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(d)
    if mask is not None:
        blocked = np.broadcast_to(mask, scores.shape)
        if blocked.all(axis=-1).any():
            raise ValueError("a query has every key blocked")
        scores[blocked] = -np.inf
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", weights, v), weights
