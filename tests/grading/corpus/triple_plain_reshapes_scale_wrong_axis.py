# expect: no-head-transpose, scale-dmodel, softmax-wrong-axis
# The plain-reshape habit both ways, plus two other mistakes: still within three faults.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    n_k = K.shape[1]
    dk = d // num_heads
    q = (Q @ W_q).reshape(b, num_heads, n_q, dk)
    k = (K @ W_k).reshape(b, num_heads, n_k, dk)
    v = (V @ W_v).reshape(b, num_heads, n_k, dk)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    s = s - s.max(axis=2, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=2, keepdims=True)
    return (p @ v).reshape(b, n_q, d) @ W_o
