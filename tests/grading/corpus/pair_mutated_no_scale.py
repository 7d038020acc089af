# expect: input-mutated, no-scale
# Saves memory by writing the result into Q's buffer; forgets the scale.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads
    q = (Q @ W_q).reshape(batch, n_q, num_heads, d_k).transpose(0, 2, 1, 3)
    k = (K @ W_k).reshape(batch, -1, num_heads, d_k).transpose(0, 2, 1, 3)
    v = (V @ W_v).reshape(batch, -1, num_heads, d_k).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    merged = (s @ v).transpose(0, 2, 1, 3).reshape(batch, n_q, d_model)
    return np.matmul(merged, W_o, out=Q)
