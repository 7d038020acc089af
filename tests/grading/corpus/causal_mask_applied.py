# expect: causal-mask-applied
# A decoder layer's causal mask (tril, masked_fill with -1e9) kept where the problem has none.
import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    n_k = K.shape[1]
    dk = d // num_heads
    q = (Q @ W_q).reshape(b, n_q, num_heads, dk).transpose(0, 2, 1, 3)
    k = (K @ W_k).reshape(b, n_k, num_heads, dk).transpose(0, 2, 1, 3)
    v = (V @ W_v).reshape(b, n_k, num_heads, dk).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    mask = np.tril(np.ones((n_q, n_k)))
    scores = np.where(mask == 0, -1e9, scores)
    out = softmax(scores) @ v
    return out.transpose(0, 2, 1, 3).reshape(b, n_q, d) @ W_o
