# expect: sums-whole-array
# The weighted sum taken with np.sum and no axis: one number for the whole array, as for a
# single softmax vector.
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    weighted = np.sum(probabilities * upstream)
    return probabilities * (upstream - weighted)
