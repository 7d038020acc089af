# expect: reshape-order
# Splits as (d_k, h) and merges back the same way.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads

    def split(x):
        b, n, _ = x.shape
        return x.reshape(b, n, d_k, num_heads).transpose(0, 3, 1, 2)

    q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    heads = w @ v  # (b, h, n_q, d_k)
    return heads.transpose(0, 2, 3, 1).reshape(batch, n_q, d_model) @ W_o
