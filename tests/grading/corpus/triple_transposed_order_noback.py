# expect: weights-transposed, reshape-order, no-transpose-back
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    dk = d // num_heads
    q = (Q @ W_q.T).reshape(b, n_q, dk, num_heads).transpose(0, 3, 1, 2)
    k = (K @ W_k.T).reshape(b, K.shape[1], dk, num_heads).transpose(0, 3, 1, 2)
    v = (V @ W_v.T).reshape(b, V.shape[1], dk, num_heads).transpose(0, 3, 1, 2)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).reshape(b, n_q, d) @ W_o
