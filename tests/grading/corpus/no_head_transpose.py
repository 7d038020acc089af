# expect: no-head-transpose
# A class; split reshapes straight to (b, h, n, d_k), merge transposes back.
import numpy as np


class Attention:
    def __init__(self, num_heads):
        self.h = num_heads

    def split(self, x):
        b, n, d = x.shape
        return x.reshape(b, self.h, n, d // self.h)

    def merge(self, x):
        b, h, n, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, n, h * dk)

    def forward(self, Q, K, V, W_q, W_k, W_v, W_o):
        q, k, v = self.split(Q @ W_q), self.split(K @ W_k), self.split(V @ W_v)
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        return self.merge(p @ v) @ W_o


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    return Attention(num_heads).forward(Q, K, V, W_q, W_k, W_v, W_o)
