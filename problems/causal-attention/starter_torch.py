import torch


def causal_attention(q, k, v):
    """Causal scaled dot-product attention for queries appended to a KV cache.

    q: (..., n_q, d); k, v: (..., n_k, d) with n_k >= n_q; the leading axes
    (none, a batch, a batch and heads...) are the same for all three.
    Query i is position n_k - n_q + i of the sequence and may attend to keys
    0 .. n_k - n_q + i. Returns a tensor of shape (..., n_q, d).
    """
    # Tensors in (float64; masks torch.bool; counts are ints), a tensor out.
    # Your code here.
    raise NotImplementedError
