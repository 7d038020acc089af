# expect: reshape-order
# Helper functions: split reads the width as (d_k, h), merge is the textbook one.
import numpy as np


def split_heads(x, h):
    b, n, d = x.shape
    return np.moveaxis(x.reshape(b, n, d // h, h), -1, 1)


def merge_heads(x):
    b, h, n, dk = x.shape
    return np.moveaxis(x, 1, 2).reshape(b, n, h * dk)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    q = split_heads(Q @ W_q, num_heads)
    k = split_heads(K @ W_k, num_heads)
    v = split_heads(V @ W_v, num_heads)
    d_k = q.shape[-1]
    a = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k))
    return merge_heads(a @ v) @ W_o
