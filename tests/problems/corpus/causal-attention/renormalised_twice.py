# expect: unrecognized
# implicates: block-future, softmax-keys
# Sums the exponentials over all keys but keeps only the allowed ones in the numerator.
import numpy as np


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s)
    total = e.sum(axis=-1, keepdims=True) + 1.0
    keep = np.tril(np.ones((n_q, n_k)), k=n_k - n_q)
    return (e * keep / total) @ v
