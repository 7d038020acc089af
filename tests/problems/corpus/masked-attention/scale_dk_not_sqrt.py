# expect: scale-dk-not-sqrt
# Divides the scores by d_k, the square of the right scale.
import numpy as np


def masked_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = np.einsum("...qd,...kd->...qk", q, k) / d_k
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)
        if mask.all(axis=-1).any():
            raise ValueError("every key of some query is blocked")
        scores = np.where(mask, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ v, weights
