# expect: diagonal-blocked
# Loops with range(last) instead of range(last + 1): a query never sees itself.
import numpy as np


def causal_attention(q, k, v):
    batch, n_q, d = q.shape
    n_k = k.shape[1]
    out = np.zeros_like(q)
    for b in range(batch):
        for i in range(n_q):
            last = n_k - n_q + i
            scores = np.full(n_k, -np.inf)
            for j in range(last):
                scores[j] = q[b, i] @ k[b, j] / np.sqrt(d)
            w = np.exp(scores - scores.max())
            out[b, i] = (w / w.sum()) @ v[b]
    return out
