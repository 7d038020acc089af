# expect: no-input-projections
# Splits heads from the raw inputs (a common port of a "split then project per head" layer that
# forgot the projection): W_q, W_k, W_v never used.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads

    def split(x):
        return x.reshape(x.shape[0], x.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(Q), split(K), split(V)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d_k)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    heads = np.einsum("bhqk,bhkd->bqhd", weights, v)
    return heads.reshape(batch, n_q, d_model) @ W_o
