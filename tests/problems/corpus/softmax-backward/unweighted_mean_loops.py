# expect: unweighted-mean
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    p = np.moveaxis(probabilities, axis, 0)
    g = np.moveaxis(upstream, axis, 0)
    n = p.shape[0]
    mean = sum(g[j] for j in range(n)) / n
    out = np.stack([p[i] * (g[i] - mean) for i in range(n)])
    return np.moveaxis(out, 0, axis)
