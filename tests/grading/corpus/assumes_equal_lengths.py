# expect: assumes-equal-lengths
# Sizes every sequence with Q's length: crashes on cross-attention.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, seq, d_model = Q.shape
    d_k = d_model // num_heads

    def split(x):
        return x.reshape(batch, seq, num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d_model) @ W_o
