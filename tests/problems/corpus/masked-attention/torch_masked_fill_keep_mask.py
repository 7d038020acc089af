# expect: mask-inverted
# PyTorch habit: a mask that says where to attend, filled where it is 0 (masked_fill(mask == 0,
# ...)), as in NHMDenmark/HTROCR htr_tests/test.py; here True means blocked, so it is inverted.
import math

import torch


def masked_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        if torch.broadcast_to(mask, scores.shape).all(dim=-1).any():
            raise ValueError("every key of a query is blocked")
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
