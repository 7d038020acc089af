# expect: ignores-axis, unweighted-mean
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    out = np.empty_like(probabilities)
    for index in np.ndindex(probabilities.shape[:-1]):
        p, g = probabilities[index], upstream[index]
        out[index] = p * (g - g.mean())
    return out
