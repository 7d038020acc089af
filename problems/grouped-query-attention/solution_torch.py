"""A correct PyTorch solution, written as a student would (tensors in, a tensor out).
Trusted: never served. ``problems check`` grades it in the sandbox, and each PyTorch habit of
faults.toml ([habits]) is a few edits of it."""

import math

import torch


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q).view(b, n, num_heads, d_k).transpose(1, 2)
    k = (x @ W_k).view(b, n, num_kv_heads, d_k).transpose(1, 2)
    v = (x @ W_v).view(b, n, num_kv_heads, d_k).transpose(1, 2)
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n, d_model)
    return out @ W_o
