# expect: missing-wo, scale-dmodel
# einsum all the way; scales by d_model and stops at the concatenation.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n, d = Q.shape
    h = num_heads
    q = np.einsum("bnd,de->bne", Q, W_q).reshape(b, n, h, -1)
    k = np.einsum("bnd,de->bne", K, W_k).reshape(b, K.shape[1], h, -1)
    v = np.einsum("bnd,de->bne", V, W_v).reshape(b, V.shape[1], h, -1)
    s = np.einsum("bihe,bjhe->bhij", q, k) / d**0.5
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s = s / s.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bjhe->bihe", s, v).reshape(b, n, d)
