import numpy as np

FAULTS = frozenset({"eps-outside-sqrt", "no-eps"})


def layer_norm(x, gamma, beta, eps=1e-05, *, faults=frozenset()):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    if "no-eps" in faults:
        scale = np.sqrt(var)
    elif "eps-outside-sqrt" in faults:
        scale = np.sqrt(var) + eps
    else:
        scale = np.sqrt(var + eps)
    return gamma * (x - mean) / scale + beta
