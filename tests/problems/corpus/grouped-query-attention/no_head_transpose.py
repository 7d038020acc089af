# expect: no-head-transpose
# Reshapes straight to (batch, heads, n, d_k), but merges the right way.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q).reshape(batch, num_heads, n, d_k)
    k = (x @ W_k).reshape(batch, num_kv_heads, n, d_k)
    v = (x @ W_v).reshape(batch, num_kv_heads, n, d_k)
    k = np.repeat(k, num_heads // num_kv_heads, axis=1)
    v = np.repeat(v, num_heads // num_kv_heads, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model) @ W_o
