# expect: accepted
import numpy as np


def _slice_backward(p, g):
    jacobian = np.diag(p) - np.outer(p, p)
    return jacobian.T @ g


def softmax_backward(probabilities, upstream, axis=-1):
    p_rows = np.moveaxis(probabilities, axis, -1)
    g_rows = np.moveaxis(upstream, axis, -1)
    out = np.empty_like(p_rows)
    for index in np.ndindex(p_rows.shape[:-1]):
        out[index] = _slice_backward(p_rows[index], g_rows[index])
    return np.moveaxis(out, -1, axis)
