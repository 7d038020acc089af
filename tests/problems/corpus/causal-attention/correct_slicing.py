# expect: accepted
# Per query, slice the keys up to its position and use a log-sum-exp softmax.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    rows = []
    for i in range(n_q):
        stop = n_k - n_q + i + 1
        s = np.einsum("...d,...kd->...k", q[..., i, :], k[..., :stop, :]) / np.sqrt(q.shape[-1])
        m = s.max(axis=-1, keepdims=True)
        lse = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
        rows.append(np.einsum("...k,...kd->...d", np.exp(s - lse), v[..., :stop, :]))
    return np.stack(rows, axis=-2)
