"""Reference for the variadic demo; ``faults`` switches on the mistakes of faults.toml."""

import numpy as np

FAULTS = frozenset({"no-scale", "mask-inverted", "softmax-wrong-axis"})


def attention_weights(q, k, mask=None, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    scale = 1.0 if "no-scale" in faults else np.sqrt(q.shape[-1])
    scores = q @ np.swapaxes(k, -1, -2) / scale
    if mask is not None:
        blocked = ~mask if "mask-inverted" in faults else mask
        scores = np.where(blocked, -np.inf, scores)
    axis = -2 if "softmax-wrong-axis" in faults else -1
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return weights / weights.sum(axis=axis, keepdims=True)
