# expect: accepted
import numpy as np


def masked_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(d_k)
    if mask is not None:
        blocked = np.broadcast_to(mask, scores.shape)
        if np.any(np.all(blocked, axis=-1)):
            raise ValueError("mask leaves a query with no key")
        scores = np.where(blocked, -np.inf, scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    output = np.einsum("...ij,...jd->...id", weights, v)
    return output, weights
