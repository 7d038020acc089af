# expect: diagonal-blocked, no-scale
# einsum with a strict comparison and raw scores.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    s = np.einsum("...qd,...kd->...qk", q, k)
    visible = np.arange(n_k) < (np.arange(n_q) + n_k - n_q)[:, None]
    s = np.where(visible, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("...qk,...kd->...qd", w / w.sum(axis=-1, keepdims=True), v)
