# expect: accepts-empty-row
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -1e9, scores)  # an empty row comes out uniform
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", weights, v), weights
