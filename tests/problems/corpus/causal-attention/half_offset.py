# expect: unrecognized
# implicates: align-to-cache
# The queries are placed halfway into the cache instead of at its end.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    pos = np.arange(n_q)[:, None] + (n_k - n_q) // 2
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(np.arange(n_k)[None, :] <= pos, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v
