# expect: unweighted-sum


def softmax_backward(probabilities, upstream, axis=-1):
    total = upstream.sum(axis=axis, keepdims=True)
    return probabilities * (upstream - total)
