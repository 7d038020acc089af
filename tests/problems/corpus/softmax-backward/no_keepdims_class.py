# expect: no-keepdims
# A habit from public code (xinghaow99/transformer_from_scratch, modules/softmax.py): a Softmax
# layer whose backward sums y * grad along its axis without keepdims. Right for a 1-D input and
# wherever the shapes line up by chance; a broadcasting error or wrong values elsewhere.


class Softmax:
    def __init__(self, axis=-1):
        self.axis = axis

    def backward(self, y, grad_y):
        return y * (grad_y - (grad_y * y).sum(axis=self.axis))


def softmax_backward(probabilities, upstream, axis=-1):
    return Softmax(axis).backward(probabilities, upstream)
