# expect: upper-left-alignment, mask-after-softmax
# is_causal-style top-left triangle, applied to the weights after the softmax.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    w = w * np.tril(np.ones((n_q, n_k)))
    return w @ v
