# expect: no-keepdims
# Was unrecognized before the error model knew this habit: the sum loses the axis and broadcasts
# against the last one (right for 1-D, a broadcasting error on most other shapes).
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    weighted = np.sum(probabilities * upstream, axis=axis)
    return probabilities * (upstream - weighted)
