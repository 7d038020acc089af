# expect: diagonal-only, missing-outer-p


def softmax_backward(probabilities, upstream, axis=-1):
    # Only the diagonal term, and the factor p_i dropped: (1 - p_i) g_i.
    return (1 - probabilities) * upstream
