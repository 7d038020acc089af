# expect: ignores-axis, unweighted-sum


def softmax_backward(probabilities, upstream, axis=-1):
    return probabilities * (upstream - upstream.sum(-1, keepdims=True))
