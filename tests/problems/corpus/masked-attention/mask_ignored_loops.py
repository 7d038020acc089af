# expect: mask-ignored
import numpy as np


def masked_attention(q, k, v, mask=None):
    if mask is not None and np.broadcast_to(mask, q.shape[:-1] + k.shape[-2:-1]).all(-1).any():
        raise ValueError("a query has every key blocked")
    lead = q.shape[:-2]
    out = np.empty((*lead, q.shape[-2], v.shape[-1]))
    w = np.empty((*lead, q.shape[-2], k.shape[-2]))
    for idx in np.ndindex(*lead):
        s = q[idx] @ k[idx].T / np.sqrt(q.shape[-1])
        s = np.exp(s - s.max(axis=1, keepdims=True))
        w[idx] = s / s.sum(axis=1, keepdims=True)
        out[idx] = w[idx] @ v[idx]
    return out, w
