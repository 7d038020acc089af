# expect: causal-mask-applied, self-attention-only
# A GPT-style block: keys and values from the query input, and its causal mask (-inf).
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    B, T, C = Q.shape
    hs = C // num_heads
    q = (Q @ W_q).reshape(B, T, num_heads, hs).swapaxes(1, 2)
    k = (Q @ W_k).reshape(B, T, num_heads, hs).swapaxes(1, 2)
    v = (Q @ W_v).reshape(B, T, num_heads, hs).swapaxes(1, 2)
    att = (q @ k.swapaxes(-2, -1)) * (1.0 / np.sqrt(hs))
    causal = np.tril(np.ones((T, T), dtype=bool))
    att = np.where(causal, att, -np.inf)
    att = np.exp(att - att.max(axis=-1, keepdims=True))
    att = att / att.sum(axis=-1, keepdims=True)
    y = (att @ v).swapaxes(1, 2).reshape(B, T, C)
    return y @ W_o
