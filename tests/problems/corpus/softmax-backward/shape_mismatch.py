# expect: shape-mismatch
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    p = np.moveaxis(probabilities, axis, -1)
    g = np.moveaxis(upstream, axis, -1)
    # Forgets to move the axis back.
    return p * (g - (p * g).sum(-1, keepdims=True))
