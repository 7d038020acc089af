# expect: unrecognized
# implicates: softmax-keys
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)
        if mask.all(axis=-1).any():
            raise ValueError("a query has every key blocked")
        scores = np.where(mask, -np.inf, scores)
    weights = 1.0 / (1.0 + np.exp(-scores))
    return weights @ v, weights
