# expect: low-precision
# Right computation in float32.
import numpy as np


def causal_attention(q, k, v):
    q, k, v = (x.astype(np.float32) for x in (q, k, v))
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
    future = np.arange(n_k)[None, :] > np.arange(n_q)[:, None] + (n_k - n_q)
    scores = np.where(future, np.float32(-np.inf), scores)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v
