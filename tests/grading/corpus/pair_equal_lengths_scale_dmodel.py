# expect: assumes-equal-lengths, scale-dmodel
# A class that stores the sequence length from Q and reuses it for K and V.
import numpy as np


class Heads:
    def __init__(self, batch, seq, num_heads, d_model):
        self.shape = (batch, seq, num_heads, d_model // num_heads)

    def split(self, x):
        return x.reshape(self.shape).transpose(0, 2, 1, 3)

    def merge(self, x):
        b, n, h, dk = self.shape
        return x.transpose(0, 2, 1, 3).reshape(b, n, h * dk)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n, d = Q.shape
    heads = Heads(b, n, num_heads, d)
    q, k, v = heads.split(Q @ W_q), heads.split(K @ W_k), heads.split(V @ W_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    s = s - s.max(-1, keepdims=True)
    w = np.exp(s)
    w = w / w.sum(-1, keepdims=True)
    return heads.merge(w @ v) @ W_o
