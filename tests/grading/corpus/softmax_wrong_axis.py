# expect: softmax-wrong-axis
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads

    def split(x):
        return x.reshape(x.shape[0], x.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (b, h, n_q, n_k)
    scores = scores - scores.max(axis=2, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=2, keepdims=True)
    heads = weights @ v
    return heads.transpose(0, 2, 1, 3).reshape(batch, n_q, d_model) @ W_o
