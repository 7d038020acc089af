import torch


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    """Multi-head scaled dot-product attention.

    Q: (batch, n_q, d_model); K, V: (batch, n_k, d_model); W_*: (d_model, d_model).
    Returns a tensor of shape (batch, n_q, d_model).
    """
    # Tensors in (float64; masks torch.bool; counts are ints), a tensor out.
    # Your code here.
    raise NotImplementedError
