# expect: mask-fill-tiny
# The fill value typed as 1e-9 where -1e9 was meant: blocked keys get a score of about zero.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        if np.broadcast_to(mask, scores.shape).all(axis=-1).any():
            raise ValueError("a query has no allowed key")
        scores = np.where(mask, 1e-9, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v, weights
