# expect: reshape-order, softmax-wrong-axis
# Per-batch loop; heads taken as strided columns; softmax down the columns.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    h = num_heads
    d_k = d_model // h
    outs = []
    for b in range(batch):
        q, k, v = Q[b] @ W_q, K[b] @ W_k, V[b] @ W_v
        merged = np.zeros((n_q, d_model))
        for i in range(h):
            cols = slice(i, d_model, h)  # every h-th column
            s = q[:, cols] @ k[:, cols].T / np.sqrt(d_k)
            s = s - s.max(axis=0, keepdims=True)
            w = np.exp(s)
            w = w / w.sum(axis=0, keepdims=True)
            merged[:, cols] = w @ v[:, cols]
        outs.append(merged @ W_o)
    return np.array(outs)
