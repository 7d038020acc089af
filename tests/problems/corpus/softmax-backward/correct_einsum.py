# expect: accepted
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    p = np.moveaxis(probabilities, axis, -1)
    g = np.moveaxis(upstream, axis, -1)
    s = np.einsum("...i,...i->...", p, g)[..., None]
    return np.moveaxis(p * (g - s), -1, axis)
