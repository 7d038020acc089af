import numpy as np


def attention_weights(q, k, mask=None):
    """q: (..., n_q, d), k: (..., n_k, d); mask: None or bool broadcastable to (..., n_q, n_k),
    True = blocked. Returns the weights, (..., n_q, n_k)."""
    raise NotImplementedError
