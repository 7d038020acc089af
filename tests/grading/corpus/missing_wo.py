# expect: missing-wo
# Loops over heads; concatenates and stops there.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    d_k = Q.shape[-1] // num_heads
    q, k, v = Q @ W_q, K @ W_k, V @ W_v
    heads = []
    for i in range(num_heads):
        cols = slice(i * d_k, (i + 1) * d_k)
        s = q[:, :, cols] @ k[:, :, cols].transpose(0, 2, 1) / np.sqrt(d_k)
        s = s - s.max(axis=-1, keepdims=True)
        w = np.exp(s)
        w /= w.sum(axis=-1, keepdims=True)
        heads.append(w @ v[:, :, cols])
    return np.concatenate(heads, axis=-1)
