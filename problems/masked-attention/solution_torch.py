"""A correct PyTorch solution, written as a student would (tensors in, a tensor out).
Trusted: never served. ``problems check`` grades it in the sandbox, and each PyTorch habit of
faults.toml ([habits]) is a few edits of it."""

import math

import torch


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        if torch.broadcast_to(mask, scores.shape).all(dim=-1).any():
            raise ValueError("the mask blocks every key of some query")
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
