# expect: accepted
# An nn.Module-like class with helper methods; swapaxes instead of transpose.
import numpy as np


class MultiHeadAttention:
    def __init__(self, W_q, W_k, W_v, W_o, num_heads):
        self.W_q, self.W_k, self.W_v, self.W_o = W_q, W_k, W_v, W_o
        self.h = num_heads

    def _split(self, x):
        b, n, d = x.shape
        return np.swapaxes(x.reshape(b, n, self.h, d // self.h), 1, 2)

    def _merge(self, x):
        b, h, n, dk = x.shape
        return np.swapaxes(x, 1, 2).reshape(b, n, h * dk)

    @staticmethod
    def _softmax(x):
        z = x - np.max(x, axis=-1, keepdims=True)
        e = np.exp(z)
        return e / np.sum(e, axis=-1, keepdims=True)

    def __call__(self, Q, K, V):
        q = self._split(np.matmul(Q, self.W_q))
        k = self._split(np.matmul(K, self.W_k))
        v = self._split(np.matmul(V, self.W_v))
        d_k = q.shape[-1]
        att = self._softmax(np.matmul(q, np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(d_k)))
        return np.matmul(self._merge(np.matmul(att, v)), self.W_o)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    return MultiHeadAttention(W_q, W_k, W_v, W_o, num_heads)(Q, K, V)
