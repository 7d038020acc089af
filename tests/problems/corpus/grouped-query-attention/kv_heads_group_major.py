# expect: kv-heads-interleaved
# The query heads grouped as (group, kv_head) instead of (kv_head, group): query head h then
# shares key/value head h % num_kv_heads, not h // group.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d_model = x.shape
    d = d_model // num_heads
    g = num_heads // num_kv_heads
    q = (x @ W_q).reshape(b, n, g, num_kv_heads, d)
    k = (x @ W_k).reshape(b, n, num_kv_heads, d)
    v = (x @ W_v).reshape(b, n, num_kv_heads, d)
    s = np.einsum("bqgkd,bpkd->bgkqp", q, k) / np.sqrt(d)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    o = np.einsum("bgkqp,bpkd->bqgkd", w, v)
    return o.reshape(b, n, d_model) @ W_o
