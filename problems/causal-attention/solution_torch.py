"""A correct PyTorch solution, written as a student would (tensors in, a tensor out).
Trusted: never served. ``problems check`` grades it in the sandbox, and each PyTorch habit of
faults.toml ([habits]) is a few edits of it."""

import math

import torch


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    blocked = torch.ones(n_q, n_k, dtype=torch.bool).triu(diagonal=n_k - n_q + 1)
    scores = scores.masked_fill(blocked, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
