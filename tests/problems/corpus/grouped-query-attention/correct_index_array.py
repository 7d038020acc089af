# expect: accepted
# Picks each query head's key/value head with an index array; softmax via logsumexp.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    B, n, D = x.shape
    dk = D // num_heads
    q = (x @ W_q).reshape(B, n, num_heads, dk).swapaxes(1, 2)
    k = (x @ W_k).reshape(B, n, num_kv_heads, dk).swapaxes(1, 2)
    v = (x @ W_v).reshape(B, n, num_kv_heads, dk).swapaxes(1, 2)
    kv_of = np.arange(num_heads) * num_kv_heads // num_heads
    k, v = k[:, kv_of], v[:, kv_of]
    s = np.matmul(q, np.swapaxes(k, -1, -2)) / dk**0.5
    m = s.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
    heads = np.exp(s - lse) @ v
    return heads.swapaxes(1, 2).reshape(B, n, D) @ W_o
