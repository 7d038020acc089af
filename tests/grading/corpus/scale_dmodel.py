# expect: scale-dmodel
# einsum, scaled by the full width.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n, d = Q.shape
    m = K.shape[1]
    h = num_heads
    q = (Q @ W_q).reshape(b, n, h, d // h)
    k = (K @ W_k).reshape(b, m, h, d // h)
    v = (V @ W_v).reshape(b, m, h, d // h)
    scores = np.einsum("bihe,bjhe->bhij", q, k) / np.sqrt(d)
    scores = scores - scores.max(-1, keepdims=True)
    att = np.exp(scores)
    att = att / att.sum(-1, keepdims=True)
    return np.einsum("bhij,bjhe->bihe", att, v).reshape(b, n, d) @ W_o
