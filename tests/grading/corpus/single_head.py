# expect: single-head
# num_heads accepted and ignored: plain scaled dot-product attention over the whole width.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    q, k, v = Q @ W_q, K @ W_k, V @ W_v
    d_model = q.shape[-1]
    out = np.empty_like(q)
    for b in range(q.shape[0]):
        scores = q[b] @ k[b].T / np.sqrt(d_model)
        scores = scores - scores.max(axis=1, keepdims=True)
        w = np.exp(scores)
        w = w / w.sum(axis=1, keepdims=True)
        out[b] = w @ v[b]
    return out @ W_o
