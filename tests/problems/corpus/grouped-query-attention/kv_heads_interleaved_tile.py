# expect: kv-heads-interleaved
# np.tile instead of np.repeat: query head h gets key/value head h % num_kv_heads.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    group = num_heads // num_kv_heads
    q = (x @ W_q).reshape(batch, n, num_heads, d_k).transpose(0, 2, 1, 3)
    k = (x @ W_k).reshape(batch, n, num_kv_heads, d_k).transpose(0, 2, 1, 3)
    v = (x @ W_v).reshape(batch, n, num_kv_heads, d_k).transpose(0, 2, 1, 3)
    k = np.tile(k, (1, group, 1, 1))
    v = np.tile(v, (1, group, 1, 1))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model) @ W_o
