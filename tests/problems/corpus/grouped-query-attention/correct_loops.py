# expect: accepted
# Loops over batch and query heads, slicing each head's columns by hand.
import math

import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    group = num_heads // num_kv_heads
    out = np.zeros((batch, n, d_model))
    for b in range(batch):
        q_all, k_all, v_all = x[b] @ W_q, x[b] @ W_k, x[b] @ W_v
        merged = np.zeros((n, d_model))
        for h in range(num_heads):
            j = h // group
            q = q_all[:, h * d_k : (h + 1) * d_k]
            k = k_all[:, j * d_k : (j + 1) * d_k]
            v = v_all[:, j * d_k : (j + 1) * d_k]
            for i in range(n):
                scores = [float(q[i] @ k[t]) / math.sqrt(d_k) for t in range(n)]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                total = sum(e)
                merged[i, h * d_k : (h + 1) * d_k] = sum(e[t] / total * v[t] for t in range(n))
        out[b] = merged @ W_o
    return out
