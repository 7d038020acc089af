# expect: unrecognized
# Right everywhere except the error type: no known mistake raises anything but ValueError.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)
        if mask.all(axis=-1).any():
            raise RuntimeError("a query has every key blocked")
        scores = np.where(mask, -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v, weights
