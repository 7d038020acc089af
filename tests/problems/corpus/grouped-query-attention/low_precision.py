# expect: low-precision
# Right computation in float32.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    x, W_q, W_k, W_v, W_o = (a.astype(np.float32) for a in (x, W_q, W_k, W_v, W_o))
    b, n, d = x.shape
    dk = d // num_heads
    r = num_heads // num_kv_heads
    q = (x @ W_q).reshape(b, n, num_kv_heads, r, dk)
    k = (x @ W_k).reshape(b, n, num_kv_heads, dk)
    v = (x @ W_v).reshape(b, n, num_kv_heads, dk)
    s = np.einsum("bqgrc,bkgc->bgrqk", q, k) / np.float32(np.sqrt(dk))
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a = a / a.sum(axis=-1, keepdims=True)
    return np.einsum("bgrqk,bkgc->bqgrc", a, v).reshape(b, n, d) @ W_o
