# expect: accepted
# Helper functions; softmax through log-sum-exp; heads stacked with a list comprehension.
import numpy as np


def project(x, w):
    return np.tensordot(x, w, axes=([2], [0]))


def log_softmax(s):
    m = s.max(axis=-1, keepdims=True)
    return s - m - np.log(np.exp(s - m).sum(axis=-1, keepdims=True))


def head(q, k, v, i, d_k):
    cols = slice(i * d_k, (i + 1) * d_k)
    s = q[..., cols] @ np.swapaxes(k[..., cols], 1, 2) / d_k**0.5
    return np.exp(log_softmax(s)) @ v[..., cols]


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    d_k = Q.shape[-1] // num_heads
    q, k, v = project(Q, W_q), project(K, W_k), project(V, W_v)
    heads = [head(q, k, v, i, d_k) for i in range(num_heads)]
    return project(np.concatenate(heads, axis=-1), W_o)
