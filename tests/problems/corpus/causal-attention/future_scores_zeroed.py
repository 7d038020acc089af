# expect: future-scores-zeroed
# The scores multiplied by a 0/1 mask: a blocked key's score becomes 0, not -inf.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    keep = np.tril(np.ones((n_q, n_k)), k=n_k - n_q)
    scores = (q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) * keep
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v
