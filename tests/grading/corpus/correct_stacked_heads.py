# expect: accepted
# Heads stacked with np.stack over column blocks, softmax via scipy-style helper.
import numpy as np


def stable_softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    np.exp(z, out=z)
    z /= np.sum(z, axis=axis, keepdims=True)
    return z


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    d_k = Q.shape[-1] // num_heads
    proj = [x @ w for x, w in ((Q, W_q), (K, W_k), (V, W_v))]
    q, k, v = (np.stack(np.split(p, num_heads, axis=-1), axis=1) for p in proj)
    a = stable_softmax(np.matmul(q, k.swapaxes(-1, -2)) / np.sqrt(d_k))
    heads = np.matmul(a, v)
    return np.concatenate(list(heads.swapaxes(0, 1)), axis=-1) @ W_o
