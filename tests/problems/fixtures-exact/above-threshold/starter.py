import numpy as np  # noqa: F401  (the student uses it)


def above_threshold(x, threshold):
    raise NotImplementedError
