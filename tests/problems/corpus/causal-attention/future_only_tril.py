# expect: future-only
# The lower triangle (the allowed part) used as the blocked part.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    blocked = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores[..., blocked] = -np.inf
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v
