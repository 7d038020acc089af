# expect: no-scale, softmax-wrong-axis
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    group = num_heads // num_kv_heads
    q_all, k_all, v_all = x @ W_q, x @ W_k, x @ W_v
    merged = np.empty((batch, n, d_model))
    for h in range(num_heads):
        j = h // group
        q = q_all[..., h * d_k : (h + 1) * d_k]
        k = k_all[..., j * d_k : (j + 1) * d_k]
        v = v_all[..., j * d_k : (j + 1) * d_k]
        s = np.einsum("bqc,bkc->bqk", q, k)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w = w / w.sum(axis=1, keepdims=True)
        merged[..., h * d_k : (h + 1) * d_k] = w @ v
    return merged @ W_o
