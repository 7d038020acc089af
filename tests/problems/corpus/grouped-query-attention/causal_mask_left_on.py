# expect: causal-mask-applied
# Lifted from a decoder block (as in LLaMA-style code: the scores get a triu(-inf, 1) mask
# before the softmax), so every query sees only the positions up to its own.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    batch, n, d_model = x.shape
    head_dim = d_model // num_heads
    n_rep = num_heads // num_kv_heads
    xq = (x @ W_q).reshape(batch, n, num_heads, head_dim).transpose(0, 2, 1, 3)
    xk = (x @ W_k).reshape(batch, n, num_kv_heads, head_dim)
    xv = (x @ W_v).reshape(batch, n, num_kv_heads, head_dim)
    # repeat_kv: (b, n, kv, d) -> (b, n, kv * n_rep, d), each kv head n_rep times in a row
    xk = np.broadcast_to(xk[:, :, :, None], (batch, n, num_kv_heads, n_rep, head_dim))
    xv = np.broadcast_to(xv[:, :, :, None], (batch, n, num_kv_heads, n_rep, head_dim))
    keys = xk.reshape(batch, n, num_heads, head_dim).transpose(0, 2, 1, 3)
    values = xv.reshape(batch, n, num_heads, head_dim).transpose(0, 2, 1, 3)
    scores = xq @ keys.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    scores = scores + np.triu(np.full((n, n), -np.inf), k=1)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores = scores / scores.sum(axis=-1, keepdims=True)
    out = (scores @ values).transpose(0, 2, 1, 3).reshape(batch, n, d_model)
    return out @ W_o
