# expect: diagonal-blocked
# PyTorch habit: torch.triu's diagonal off by one (the default diagonal=0 of
# `torch.triu(torch.ones(sz, sz))` in Zenasj/HBTGen-artifact data/pytorch-issue/issue_29546.py
# keeps the diagonal on the wrong side): each query blocks its own position.
import math

import torch


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.triu(torch.ones(n_q, n_k, dtype=torch.bool), diagonal=n_k - n_q)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
