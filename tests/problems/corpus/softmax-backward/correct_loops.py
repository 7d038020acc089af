# expect: accepted
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    p = np.moveaxis(probabilities, axis, -1)
    g = np.moveaxis(upstream, axis, -1)
    n = p.shape[-1]
    rows_p = p.reshape(-1, n)
    rows_g = g.reshape(-1, n)
    out = np.zeros_like(rows_p)
    for r in range(rows_p.shape[0]):
        total = 0.0
        for j in range(n):
            total += rows_p[r, j] * rows_g[r, j]
        for i in range(n):
            out[r, i] = rows_p[r, i] * (rows_g[r, i] - total)
    return np.moveaxis(out.reshape(p.shape), -1, axis)
