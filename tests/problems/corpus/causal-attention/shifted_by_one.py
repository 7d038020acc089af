# expect: unrecognized
# implicates: block-future
# The offset is off by one the other way: each query also sees the next position (clipped).
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    pos = np.minimum(np.arange(n_q)[:, None] + (n_k - n_q) + 1, n_k - 1)
    future = np.arange(n_k)[None, :] > pos
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s[..., future] = -np.inf
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v
