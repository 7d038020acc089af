# expect: upper-left-alignment
# np.tril of an (n_q, n_k) matrix: the triangle starts at the first key, not at the end.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed = np.tril(np.ones((n_q, n_k), dtype=bool))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v
