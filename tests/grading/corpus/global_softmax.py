# expect: global-softmax
# einsum; the softmax normalises the whole score matrix of a head.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    n_k = K.shape[1]
    dk = d // num_heads
    q = (Q @ W_q).reshape(b, n_q, num_heads, dk)
    k = (K @ W_k).reshape(b, n_k, num_heads, dk)
    v = (V @ W_v).reshape(b, n_k, num_heads, dk)
    s = np.einsum("bqhc,bkhc->bhqk", q, k) / np.sqrt(dk)
    s = s - s.max(axis=(2, 3), keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=(2, 3), keepdims=True)
    return np.einsum("bhqk,bkhc->bqhc", a, v).reshape(b, n_q, d) @ W_o
