# expect: kv-heads-interleaved
# Loops over heads; the key/value head is chosen with a modulo.
import numpy as np


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    d_model = x.shape[-1]
    d_k = d_model // num_heads
    q_all, k_all, v_all = x @ W_q, x @ W_k, x @ W_v
    heads = []
    for h in range(num_heads):
        j = h % num_kv_heads
        q = q_all[..., h * d_k : (h + 1) * d_k]
        k = k_all[..., j * d_k : (j + 1) * d_k]
        v = v_all[..., j * d_k : (j + 1) * d_k]
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)
        s = s - s.max(axis=-1, keepdims=True)
        w = np.exp(s)
        heads.append(w / w.sum(axis=-1, keepdims=True) @ v)
    return np.concatenate(heads, axis=-1) @ W_o
