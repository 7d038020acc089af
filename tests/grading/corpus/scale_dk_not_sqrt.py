# expect: scale-dk-not-sqrt
# Loops over batch and heads; divides by d_k.
import numpy as np


def softmax_rows(s):
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, _, d_model = Q.shape
    d_k = d_model // num_heads
    result = []
    for b in range(batch):
        q, k, v = Q[b] @ W_q, K[b] @ W_k, V[b] @ W_v
        heads = [
            softmax_rows(q[:, i * d_k : (i + 1) * d_k] @ k[:, i * d_k : (i + 1) * d_k].T / d_k)
            @ v[:, i * d_k : (i + 1) * d_k]
            for i in range(num_heads)
        ]
        result.append(np.hstack(heads) @ W_o)
    return np.stack(result)
