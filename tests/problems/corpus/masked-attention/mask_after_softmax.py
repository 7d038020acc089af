# expect: mask-after-softmax
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None and np.broadcast_to(mask, scores.shape).all(axis=-1).any():
        raise ValueError("a query has every key blocked")
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = weights * ~mask
    return weights @ v, weights
