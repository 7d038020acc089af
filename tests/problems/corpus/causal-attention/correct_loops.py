# expect: accepted
# Plain loops: each query only ever looks at the keys it may see.
import math

import numpy as np


def causal_attention(q, k, v):
    batch, n_q, d = q.shape
    n_k = k.shape[1]
    out = np.zeros((batch, n_q, d))
    for b in range(batch):
        for i in range(n_q):
            last = n_k - n_q + i
            scores = [float(q[b, i] @ k[b, j]) / math.sqrt(d) for j in range(last + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = sum(exps)
            for j, e in enumerate(exps):
                out[b, i] += e / total * v[b, j]
    return out
