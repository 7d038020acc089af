# expect: mask-dropped-with-cache
# The mask is built only when there is no cache ("if past_key_values is None: mask = causal"),
# as decoding code written for one new token at a time does: right for a single query, but
# several new queries then see each other's future.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if n_k == n_q:  # no cached positions
        scores = scores + np.triu(np.full((n_q, n_k), -np.inf), k=1)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ v
