# expect: missing-outer-p
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    return upstream - np.sum(probabilities * upstream, axis=axis, keepdims=True)
