# expect: diagonal-blocked
# Loops with range(last) instead of range(last + 1): a query never sees itself.
import numpy as np


def causal_attention(q, k, v):
    *lead, n_q, d = q.shape
    n_k = k.shape[-2]
    out = np.zeros_like(q)
    for idx in np.ndindex(*lead):
        for i in range(n_q):
            last = n_k - n_q + i
            scores = np.full(n_k, -np.inf)
            for j in range(last):
                scores[j] = q[idx][i] @ k[idx][j] / np.sqrt(d)
            w = np.exp(scores - scores.max())
            out[idx][i] = (w / w.sum()) @ v[idx]
    return out
