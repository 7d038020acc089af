# expect: accepted
# einsum for both products; the mask from np.triu with the diagonal shifted by the cache length,
# and a large negative number instead of -inf.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    blocked = np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)
    scores = scores + np.where(blocked, -1e30, 0.0)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", weights, v)
