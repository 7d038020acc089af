# expect: kv-heads-interleaved, reshape-order, scale-dkv
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d = x.shape
    dk = d // num_heads
    keys = x @ W_k
    q = (x @ W_q).reshape(b, n, dk, num_heads).transpose(0, 3, 1, 2)
    k = keys.reshape(b, n, dk, num_kv_heads).transpose(0, 3, 1, 2)
    v = (x @ W_v).reshape(b, n, dk, num_kv_heads).transpose(0, 3, 1, 2)
    reps = num_heads // num_kv_heads
    k, v = np.tile(k, (1, reps, 1, 1)), np.tile(v, (1, reps, 1, 1))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(keys.shape[-1])
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a = a / a.sum(axis=-1, keepdims=True)
    return (a @ v).transpose(0, 2, 3, 1).reshape(b, n, d) @ W_o
