# expect: accepted
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    n = probabilities.shape[axis]
    both = np.concatenate([probabilities, upstream], axis=axis)

    def one_slice(row):
        p, g = row[:n], row[n:]
        return p * g - p * np.dot(p, g)

    return np.apply_along_axis(one_slice, axis, both)
