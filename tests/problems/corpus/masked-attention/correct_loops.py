# expect: accepted
import math

import numpy as np


def masked_attention(q, k, v, mask=None):
    lead = q.shape[:-2]
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    blocked = None
    if mask is not None:
        blocked = np.broadcast_to(mask, (*lead, n_q, n_k))
    output = np.zeros((*lead, n_q, d_v))
    weights = np.zeros((*lead, n_q, n_k))
    for idx in np.ndindex(*lead):
        for i in range(n_q):
            allowed = [j for j in range(n_k) if blocked is None or not blocked[idx][i, j]]
            if not allowed:
                raise ValueError(f"query {i} may attend to no key")
            scores = {}
            for j in allowed:
                scores[j] = sum(q[idx][i, t] * k[idx][j, t] for t in range(d_k)) / math.sqrt(d_k)
            top = max(scores.values())
            total = sum(math.exp(s - top) for s in scores.values())
            for j in allowed:
                weights[idx][i, j] = math.exp(scores[j] - top) / total
                output[idx][i] += weights[idx][i, j] * v[idx][j]
    return output, weights
