# expect: assumes-no-cache
# The mask is n_q x n_q, as for self-attention: with cached keys (n_k > n_q) it does not
# broadcast against the scores and the call fails.
import numpy as np


def causal_attention(q, k, v):
    n = q.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    mask = np.tril(np.ones((n, n), dtype=bool))
    scores = np.where(mask, scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v
