# expect: accepted
# Broadcast comparison of positions, -inf before a stable softmax.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    future = np.arange(n_k)[None, :] > np.arange(n_q)[:, None] + (n_k - n_q)
    scores = np.where(future, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v
