# expect: fixed-axis-1
# A habit from public code (IvanUkrRada/P-MforAI, task_1/softmax.py): the backward pass of a
# softmax over (batch, classes) rows sums over axis=1, whatever axis the softmax was taken along.
import numpy as np


def softmax_backward(probabilities, upstream, axis=-1):
    s = probabilities
    dot = np.sum(upstream * s, axis=1, keepdims=True)
    return s * (upstream - dot)
