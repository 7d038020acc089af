# expect: accepted
# PyTorch: the future blocked with torch.triu(..., diagonal=offset + 1), as in
# niujiazhen/happy-llm docs/chapter2/code/maskSelfAttention.py (there offset 0).
import math

import torch


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.triu(torch.ones(n_q, n_k, dtype=torch.bool), diagonal=n_k - n_q + 1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
