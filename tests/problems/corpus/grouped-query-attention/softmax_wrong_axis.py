# expect: softmax-wrong-axis
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d = x.shape
    dk = d // num_heads
    r = num_heads // num_kv_heads
    q = np.einsum("bnd,de->bne", x, W_q).reshape(b, n, num_kv_heads, r, dk)
    k = np.einsum("bnd,de->bne", x, W_k).reshape(b, n, num_kv_heads, dk)
    v = np.einsum("bnd,de->bne", x, W_v).reshape(b, n, num_kv_heads, dk)
    s = np.einsum("bqgrc,bkgc->bgrqk", q, k) / np.sqrt(dk)
    a = np.exp(s - s.max(axis=-2, keepdims=True))
    a = a / a.sum(axis=-2, keepdims=True)
    o = np.einsum("bgrqk,bkgc->bqgrc", a, v).reshape(b, n, d)
    return o @ W_o
