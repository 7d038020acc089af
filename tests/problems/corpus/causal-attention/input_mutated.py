# expect: input-mutated
# Right answer, but q is scaled in place.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    q /= np.sqrt(q.shape[-1])
    scores = q @ np.swapaxes(k, -1, -2)
    scores[..., np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)] = -np.inf
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v
