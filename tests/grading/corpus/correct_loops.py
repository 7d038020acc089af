# expect: accepted
# One batch item and one head at a time, plain Python loops.
import math

import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads
    out = np.empty((batch, n_q, d_model))
    for b in range(batch):
        q_all = Q[b] @ W_q
        k_all = K[b] @ W_k
        v_all = V[b] @ W_v
        heads = []
        for h in range(num_heads):
            lo, hi = h * d_k, (h + 1) * d_k
            q, k, v = q_all[:, lo:hi], k_all[:, lo:hi], v_all[:, lo:hi]
            scores = q @ k.T / math.sqrt(d_k)
            rows = []
            for row in scores:
                e = np.exp(row - row.max())
                rows.append(e / e.sum())
            heads.append(np.array(rows) @ v)
        out[b] = np.concatenate(heads, axis=1) @ W_o
    return out
