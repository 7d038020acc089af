# expect: missing-wo
import math

import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    group = num_heads // num_kv_heads
    out = np.zeros((batch, n, d_model))
    for b in range(batch):
        q_all, k_all, v_all = x[b] @ W_q, x[b] @ W_k, x[b] @ W_v
        for h in range(num_heads):
            j = h // group
            q = q_all[:, h * d_k : (h + 1) * d_k]
            k = k_all[:, j * d_k : (j + 1) * d_k]
            v = v_all[:, j * d_k : (j + 1) * d_k]
            s = q @ k.T / math.sqrt(d_k)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            out[b, :, h * d_k : (h + 1) * d_k] = (w / w.sum(axis=1, keepdims=True)) @ v
    return out
