# expect: wo-transposed
# A class; output projection applied like nn.Linear.
import numpy as np


class MHA:
    def __init__(self, W_q, W_k, W_v, W_o, h):
        self.w = (W_q, W_k, W_v)
        self.W_o = W_o
        self.h = h

    def heads(self, x, w):
        b, n, d = x.shape
        return (x @ w).reshape(b, n, self.h, d // self.h).transpose(0, 2, 1, 3)

    def __call__(self, Q, K, V):
        q, k, v = (self.heads(x, w) for x, w in zip((Q, K, V), self.w, strict=True))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(0, 2, 1, 3)
        o = o.reshape(o.shape[0], o.shape[1], -1)
        return o @ self.W_o.T


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    return MHA(W_q, W_k, W_v, W_o, num_heads)(Q, K, V)
