import torch


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    """Grouped-query self-attention.

    x: (batch, n, d_model); W_q, W_o: (d_model, d_model);
    W_k, W_v: (d_model, num_kv_heads * d_k) with d_k = d_model // num_heads.
    Query head h uses key/value head h // (num_heads // num_kv_heads).
    Returns a tensor of shape (batch, n, d_model).
    """
    # Tensors in (float64; masks torch.bool; counts are ints), a tensor out.
    # Your code here.
    raise NotImplementedError
