# expect: diagonal-blocked
# masked_fill with -1e9 on a strict triangle: a query whose every key is blocked (the first of a
# square input) gets uniform weights instead of NaN.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    blocked = np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    scores = np.where(blocked, -1e9, scores)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v
