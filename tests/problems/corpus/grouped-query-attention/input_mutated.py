# expect: input-mutated
# Right answer, but scales the query weights in place.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    W_q /= np.sqrt(d_k)  # scale once here instead of on every score
    q = (x @ W_q).reshape(batch, n, num_heads, d_k).transpose(0, 2, 1, 3)
    k = (x @ W_k).reshape(batch, n, num_kv_heads, d_k).transpose(0, 2, 1, 3)
    v = (x @ W_v).reshape(batch, n, num_kv_heads, d_k).transpose(0, 2, 1, 3)
    k = np.repeat(k, num_heads // num_kv_heads, axis=1)
    v = np.repeat(v, num_heads // num_kv_heads, axis=1)
    s = q @ k.transpose(0, 1, 3, 2)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model) @ W_o
