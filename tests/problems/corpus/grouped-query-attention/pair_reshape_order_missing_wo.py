# expect: missing-wo, reshape-order
# Splits as (d_k, heads), merges with the usual transpose, and forgets W_o.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q).reshape(batch, n, d_k, num_heads).transpose(0, 3, 1, 2)
    k = (x @ W_k).reshape(batch, n, d_k, num_kv_heads).transpose(0, 3, 1, 2)
    v = (x @ W_v).reshape(batch, n, d_k, num_kv_heads).transpose(0, 3, 1, 2)
    k = np.repeat(k, num_heads // num_kv_heads, axis=1)
    v = np.repeat(v, num_heads // num_kv_heads, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model)
