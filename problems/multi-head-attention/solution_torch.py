"""A correct PyTorch solution, written as a student would (tensors in, a tensor out).
Trusted: never served. ``problems check`` grades it in the sandbox, and each PyTorch habit of
faults.toml ([habits]) is a few edits of it."""

import math

import torch


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d_model = Q.shape
    n_k = K.shape[1]
    d_k = d_model // num_heads
    q = (Q @ W_q).view(b, n_q, num_heads, d_k).transpose(1, 2)
    k = (K @ W_k).view(b, n_k, num_heads, d_k).transpose(1, 2)
    v = (V @ W_v).view(b, n_k, num_heads, d_k).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n_q, d_model)
    return out @ W_o
