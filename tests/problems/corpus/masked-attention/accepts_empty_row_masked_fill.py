# expect: accepts-empty-row
# masked_fill(mask, -1e4) and no check: a query with every key blocked gets uniform weights.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -1e4, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", w, v), w
