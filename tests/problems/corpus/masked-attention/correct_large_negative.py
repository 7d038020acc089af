# expect: accepted
# A large negative fill instead of -inf is fine once empty rows are rejected first.
import numpy as np


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def masked_attention(q, k, v, mask=None):
    scores = np.matmul(q, k.swapaxes(-2, -1)) / q.shape[-1] ** 0.5
    if mask is not None:
        full = np.broadcast_to(mask, scores.shape)
        if (~full).sum(axis=-1).min() == 0:
            raise ValueError("empty attention row")
        scores = np.where(full, -1e9, scores)
    weights = softmax(scores)
    return np.matmul(weights, v), weights
