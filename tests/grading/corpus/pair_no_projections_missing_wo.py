# expect: missing-wo, no-input-projections
# No learned weights used at all: the heads of the raw inputs, merged and returned.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    d_model = Q.shape[-1]
    d_k = d_model // num_heads
    outs = []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        s = Q[:, :, cols] @ K[:, :, cols].transpose(0, 2, 1) / np.sqrt(d_k)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p = p / p.sum(axis=-1, keepdims=True)
        outs.append(p @ V[:, :, cols])
    return np.concatenate(outs, axis=-1)
