import numpy as np


def causal_attention(q, k, v):
    """Causal scaled dot-product attention for queries appended to a KV cache.

    q: (..., n_q, d); k, v: (..., n_k, d) with n_k >= n_q; the leading axes
    (none, a batch, a batch and heads...) are the same for all three.
    Query i is position n_k - n_q + i of the sequence and may attend to keys
    0 .. n_k - n_q + i. Returns an array of shape (..., n_q, d).
    """
    # Your code here.
    raise NotImplementedError
