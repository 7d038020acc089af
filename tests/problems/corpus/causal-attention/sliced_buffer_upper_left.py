# expect: upper-left-alignment
# A habit from public code (karpathy/nanoGPT, model.py: a registered lower-triangular buffer
# sliced as bias[:, :, :T, :T]): the mask of the largest size is sliced as mask[:n_q, :n_k],
# which puts the queries at the start of the sequence instead of after the cached keys.
import numpy as np

MAX_LEN = 64
BIAS = np.tril(np.ones((MAX_LEN, MAX_LEN), dtype=bool))


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    att = q @ np.swapaxes(k, -1, -2) * (1.0 / np.sqrt(k.shape[-1]))
    att = np.where(BIAS[:n_q, :n_k], att, -np.inf)
    att = np.exp(att - att.max(axis=-1, keepdims=True))
    att = att / att.sum(axis=-1, keepdims=True)
    return att @ v
