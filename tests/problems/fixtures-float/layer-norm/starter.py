import numpy as np


def layer_norm(x, gamma, beta, eps=1e-05):
    raise NotImplementedError
