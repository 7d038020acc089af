# expect: unrecognized
# implicates: softmax-keys
# Sigmoid attention: a query's weights do not sum to one.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d = x.shape
    dk = d // num_heads
    r = num_heads // num_kv_heads
    q = (x @ W_q).reshape(b, n, num_kv_heads, r, dk)
    k = (x @ W_k).reshape(b, n, num_kv_heads, dk)
    v = (x @ W_v).reshape(b, n, num_kv_heads, dk)
    s = np.einsum("bqgrc,bkgc->bgrqk", q, k) / np.sqrt(dk)
    a = 1.0 / (1.0 + np.exp(-s))
    return np.einsum("bgrqk,bkgc->bqgrc", a, v).reshape(b, n, d) @ W_o
