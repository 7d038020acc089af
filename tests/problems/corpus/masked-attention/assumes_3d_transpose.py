# expect: assumes-3d-inputs
# Written for (batch, n, d) inputs: transpose(0, 2, 1) fails on 2-D and 4-D inputs.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = np.matmul(q, k.transpose(0, 2, 1)) / np.sqrt(q.shape[2])
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)
        if mask.all(axis=2).any():
            raise ValueError("a query has every key blocked")
        scores = np.where(mask, -np.inf, scores)
    w = np.exp(scores - scores.max(axis=2, keepdims=True))
    w /= w.sum(axis=2, keepdims=True)
    return np.matmul(w, v), w
