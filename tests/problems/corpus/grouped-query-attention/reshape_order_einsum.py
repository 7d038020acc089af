# expect: reshape-order
# Splits every width as (d_k, heads) and merges the same way back.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d = x.shape
    dk = d // num_heads
    r = num_heads // num_kv_heads
    q = (x @ W_q).reshape(b, n, dk, num_heads)
    k = (x @ W_k).reshape(b, n, dk, num_kv_heads)
    v = (x @ W_v).reshape(b, n, dk, num_kv_heads)
    k = np.repeat(k, r, axis=-1)
    v = np.repeat(v, r, axis=-1)
    s = np.einsum("bqch,bkch->bhqk", q, k) / np.sqrt(dk)
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a = a / a.sum(axis=-1, keepdims=True)
    o = np.einsum("bhqk,bkch->bqch", a, v).reshape(b, n, d)
    return o @ W_o
