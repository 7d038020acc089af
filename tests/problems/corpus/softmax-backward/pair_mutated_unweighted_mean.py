# expect: input-mutated, unweighted-mean
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    upstream -= np.mean(upstream, axis=axis, keepdims=True)
    return probabilities * upstream
