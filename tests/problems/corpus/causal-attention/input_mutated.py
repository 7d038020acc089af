# expect: input-mutated
# Right answer, but q is scaled in place.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[1], k.shape[1]
    q /= np.sqrt(q.shape[2])
    scores = q @ k.transpose(0, 2, 1)
    scores[:, np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)] = -np.inf
    w = np.exp(scores - scores.max(axis=2, keepdims=True))
    return w / w.sum(axis=2, keepdims=True) @ v
