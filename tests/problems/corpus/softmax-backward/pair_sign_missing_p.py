# expect: missing-outer-p, sign-flipped
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    return np.sum(probabilities * upstream, axis=axis, keepdims=True) - upstream
