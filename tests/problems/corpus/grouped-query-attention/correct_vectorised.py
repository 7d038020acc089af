# expect: accepted
# Vectorised: split with reshape + transpose, share the key/value heads with np.repeat.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads

    def heads(y, count):
        return y.reshape(batch, n, count, d_k).transpose(0, 2, 1, 3)

    q = heads(x @ W_q, num_heads)
    k = np.repeat(heads(x @ W_k, num_kv_heads), num_heads // num_kv_heads, axis=1)
    v = np.repeat(heads(x @ W_v, num_kv_heads), num_heads // num_kv_heads, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model) @ W_o
