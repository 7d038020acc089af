# expect: no-scale, accepts-empty-row
# No scaling, an additive -1e9 mask and no check for a query with every key blocked: there the
# constant cancels and the query averages with the softmax of its unmasked scores.
import numpy as np


def masked_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        scores = scores + mask * -1e9
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v, w
