import numpy as np  # noqa: F401  (the student uses it)


def layer_norm(x, gamma, beta, eps=1e-05):
    raise NotImplementedError
