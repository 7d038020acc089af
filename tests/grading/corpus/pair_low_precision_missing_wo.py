# expect: low-precision, missing-wo
# float32 loops, no output projection.
import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    f = np.float32
    batch, n_q, d_model = Q.shape
    d_k = d_model // num_heads
    out = np.zeros((batch, n_q, d_model), dtype=f)
    for b in range(batch):
        q, k, v = (
            Q[b].astype(f) @ W_q.astype(f),
            K[b].astype(f) @ W_k.astype(f),
            V[b].astype(f) @ W_v.astype(f),
        )
        for i in range(num_heads):
            c = slice(i * d_k, (i + 1) * d_k)
            s = q[:, c] @ k[:, c].T / f(np.sqrt(d_k))
            w = np.exp(s - s.max(axis=1, keepdims=True))
            out[b][:, c] = (w / w.sum(axis=1, keepdims=True)) @ v[:, c]
    return out
