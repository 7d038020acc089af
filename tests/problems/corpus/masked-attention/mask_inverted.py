# expect: mask-inverted
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(k.shape[-1])
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)
        if mask.all(axis=-1).any():
            raise ValueError("no key left")
        # PyTorch habit: True = may attend
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", weights, v), weights
