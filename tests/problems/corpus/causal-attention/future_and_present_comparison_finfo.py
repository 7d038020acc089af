# expect: future-and-present
# key >= position, blocked with the dtype's most negative number: the newest query sees only
# itself, and no row is ever fully blocked.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    position = np.arange(n_k - n_q, n_k)[:, None]
    key = np.arange(n_k)[None, :]
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(key >= position, scores, np.finfo(scores.dtype).min)
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    return np.einsum("...qk,...kd->...qd", w / w.sum(axis=-1, keepdims=True), v)
