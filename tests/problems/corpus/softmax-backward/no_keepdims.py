# expect: unrecognized
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    weighted = np.sum(probabilities * upstream, axis=axis)
    return probabilities * (upstream - weighted)
