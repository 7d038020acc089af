# expect: unstable-softmax
# Helper functions; the softmax forgets to subtract the maximum.
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def split(x, h):
    b, n, d = x.shape
    return x.reshape(b, n, h, d // h).transpose(0, 2, 1, 3)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    q, k, v = split(Q @ W_q, num_heads), split(K @ W_k, num_heads), split(V @ W_v, num_heads)
    d_k = q.shape[-1]
    heads = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)) @ v
    b, h, n, _ = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(b, n, h * d_k) @ W_o
