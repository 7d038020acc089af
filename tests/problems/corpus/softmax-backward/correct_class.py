# expect: accepted


class Softmax:
    def __init__(self, axis):
        self.axis = axis

    def backward(self, probabilities, upstream):
        jvp = probabilities * upstream
        return jvp - probabilities * jvp.sum(axis=self.axis, keepdims=True)


def softmax_backward(probabilities, upstream, axis=-1):
    return Softmax(axis).backward(probabilities, upstream)
