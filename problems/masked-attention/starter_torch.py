import torch


def masked_attention(q, k, v, mask=None):
    """Scaled dot-product attention with an optional mask.

    q: (..., n_q, d_k); k: (..., n_k, d_k); v: (..., n_k, d_v), the same leading axes.
    mask: None, or a bool tensor that broadcasts to (..., n_q, n_k); True means blocked.
    Returns (output, weights) of shapes (..., n_q, d_v) and (..., n_q, n_k).
    Raises ValueError when the mask blocks every key of some query.
    """
    # Tensors in (float64; masks torch.bool; counts are ints), a tensor out.
    # Your code here.
    raise NotImplementedError
