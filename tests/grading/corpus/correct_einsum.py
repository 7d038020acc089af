# expect: accepted
# All in einsum, heads as a named axis.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    n_k = K.shape[1]
    dk = d // num_heads
    q = np.einsum("bnd,de->bne", Q, W_q).reshape(b, n_q, num_heads, dk)
    k = np.einsum("bnd,de->bne", K, W_k).reshape(b, n_k, num_heads, dk)
    v = np.einsum("bnd,de->bne", V, W_v).reshape(b, n_k, num_heads, dk)
    s = np.einsum("bqhc,bkhc->bhqk", q, k) / np.sqrt(dk)
    s -= np.max(s, axis=3, keepdims=True)
    a = np.exp(s)
    a /= np.sum(a, axis=3, keepdims=True)
    o = np.einsum("bhqk,bkhc->bqhc", a, v).reshape(b, n_q, d)
    return np.einsum("bqd,de->bqe", o, W_o)
