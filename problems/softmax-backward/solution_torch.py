"""A correct PyTorch solution, written as a student would (tensors in, a tensor out).
Trusted: never served. ``problems check`` grades it in the sandbox, and each PyTorch habit of
faults.toml ([habits]) is a few edits of it."""

import torch  # noqa: F401  (the import says PyTorch: no torch call is needed)


def softmax_backward(probabilities, upstream, axis=-1):
    inner = (probabilities * upstream).sum(dim=axis, keepdim=True)
    return probabilities * (upstream - inner)
