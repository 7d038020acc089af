# expect: no-scale, upper-left-alignment
# Two mistakes: the triangle starts at the first key, and no scaling.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    i, j = np.indices((n_q, n_k))
    scores = np.einsum("...qd,...kd->...qk", q, k)
    scores = np.where(j <= i, scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("...qk,...kd->...qd", w / w.sum(axis=-1, keepdims=True), v)
