# expect: no-keepdims, unweighted-sum
# Sums the upstream values alone, and without keepdims.


def softmax_backward(probabilities, upstream, axis=-1):
    total = upstream.sum(axis=axis)
    return probabilities * (upstream - total)
