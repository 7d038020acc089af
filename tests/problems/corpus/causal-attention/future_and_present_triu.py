# expect: future-and-present
# The mask keeps np.triu(..., k=0): each query sees its own position and the future, not the past.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    visible = np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v
