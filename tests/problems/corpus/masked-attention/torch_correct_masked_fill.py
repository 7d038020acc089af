# expect: accepted
# PyTorch, written as a PyTorch course would: masked_fill with the blocked positions, F.softmax.
import math

import torch.nn.functional as F


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if mask is not None:
        if mask.expand_as(scores).all(dim=-1).any():
            raise ValueError("a query has no key to attend to")
        scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights
