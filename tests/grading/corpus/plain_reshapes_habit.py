# expect: no-head-transpose
# Reshapes straight to (b, h, n, d_k) and straight back: no transposes at all, one habit.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    n_k = K.shape[1]
    dk = d // num_heads
    q = (Q @ W_q).reshape(b, num_heads, n_q, dk)
    k = (K @ W_k).reshape(b, num_heads, n_k, dk)
    v = (V @ W_v).reshape(b, num_heads, n_k, dk)
    s = q @ np.swapaxes(k, 2, 3) / np.sqrt(dk)
    s -= s.max(axis=3, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=3, keepdims=True)
    return (p @ v).reshape(b, n_q, d) @ W_o
