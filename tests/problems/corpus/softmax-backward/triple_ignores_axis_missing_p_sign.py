# expect: ignores-axis, missing-outer-p, sign-flipped
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    weighted = np.einsum("...j,...j->...", probabilities, upstream)[..., None]
    return weighted - upstream
