# expect: ignores-axis
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    s = np.einsum("...i,...i->...", probabilities, upstream)
    return probabilities * (upstream - s[..., np.newaxis])
