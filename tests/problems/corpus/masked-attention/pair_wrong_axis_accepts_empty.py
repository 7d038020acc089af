# expect: accepts-empty-row, softmax-wrong-axis
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    with np.errstate(invalid="ignore"):
        weights = np.exp(scores - scores.max(axis=-2, keepdims=True))
        weights = weights / weights.sum(axis=-2, keepdims=True)
    return weights @ v, weights
