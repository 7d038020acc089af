# expect: self-attention-only, unstable-softmax, scale-dk-not-sqrt
# Helper functions; a self-attention layer reused for cross-attention.
import numpy as np


def softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def self_attention(x, W_q, W_k, W_v, num_heads):
    b, n, d = x.shape
    dk = d // num_heads
    q, k, v = ((x @ w).reshape(b, n, num_heads, dk).transpose(0, 2, 1, 3) for w in (W_q, W_k, W_v))
    return softmax(q @ k.transpose(0, 1, 3, 2) / dk) @ v


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    heads = self_attention(Q, W_q, W_k, W_v, num_heads)
    b, h, n, dk = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(b, n, h * dk) @ W_o
