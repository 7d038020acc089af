# expect: fixed-heads
# A head count of 4 written into the split (einsum style), ignoring the argument.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    h = 4
    b, n_q, d = Q.shape
    q = (Q @ W_q).reshape(b, n_q, h, d // h)
    k = (K @ W_k).reshape(b, K.shape[1], h, d // h)
    v = (V @ W_v).reshape(b, V.shape[1], h, d // h)
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // h)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, n_q, d)
    return out @ W_o
