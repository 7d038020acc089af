# expect: sign-flipped


def softmax_backward(probabilities, upstream, axis=-1):
    weighted = (probabilities * upstream).sum(axis=axis, keepdims=True)
    return probabilities * (weighted - upstream)
