# expect: fixed-heads
# num_heads overwritten from a configuration constant: always 8 heads, and the reshape fails
# wherever 8 does not divide the width.
import numpy as np

CONFIG = {"n_heads": 8}


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    num_heads = CONFIG["n_heads"]
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads

    def split(x):
        return x.reshape(x.shape[0], x.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    heads = (w @ v).transpose(0, 2, 1, 3).reshape(batch, n_q, d_model)
    return heads @ W_o
