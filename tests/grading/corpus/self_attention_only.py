# expect: self-attention-only
# Loops; keys and values computed from Q (copied from a self-attention tutorial).
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads
    out = np.zeros((batch, n_q, d_model))
    for b in range(batch):
        x = Q[b]
        q_all, k_all, v_all = x @ W_q, x @ W_k, x @ W_v
        concat = np.zeros((n_q, d_model))
        for h in range(num_heads):
            c = slice(h * d_k, (h + 1) * d_k)
            s = q_all[:, c] @ k_all[:, c].T / np.sqrt(d_k)
            s = s - s.max(axis=1, keepdims=True)
            w = np.exp(s)
            w /= w.sum(axis=1, keepdims=True)
            concat[:, c] = w @ v_all[:, c]
        out[b] = concat @ W_o
    return out
