# expect: diagonal-only


def softmax_backward(probabilities, upstream, axis=-1):
    # d softmax_i / d z_i = p_i (1 - p_i)
    local = probabilities * (1.0 - probabilities)
    return local * upstream
