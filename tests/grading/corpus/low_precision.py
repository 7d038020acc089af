# expect: low-precision
# Right computation in float32 "for speed".
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    Q, K, V = (x.astype(np.float32) for x in (Q, K, V))
    W_q, W_k, W_v, W_o = (w.astype(np.float32) for w in (W_q, W_k, W_v, W_o))
    b, n_q, d = Q.shape
    dk = d // num_heads
    q = np.einsum("bnd,de->bne", Q, W_q).reshape(b, n_q, num_heads, dk)
    k = np.einsum("bnd,de->bne", K, W_k).reshape(b, -1, num_heads, dk)
    v = np.einsum("bnd,de->bne", V, W_v).reshape(b, -1, num_heads, dk)
    s = np.einsum("bqhc,bkhc->bhqk", q, k) / np.float32(np.sqrt(dk))
    s = s - s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=-1, keepdims=True)
    o = np.einsum("bhqk,bkhc->bqhc", a, v).reshape(b, n_q, d)
    return o @ W_o
