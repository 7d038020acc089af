# expect: accepted
# Plain loops: each query only ever looks at the keys it may see; np.ndindex walks any leading axes.
import math

import numpy as np


def causal_attention(q, k, v):
    *lead, n_q, d = q.shape
    n_k = k.shape[-2]
    out = np.zeros(q.shape)
    for idx in np.ndindex(*lead):
        for i in range(n_q):
            last = n_k - n_q + i
            scores = [float(q[idx][i] @ k[idx][j]) / math.sqrt(d) for j in range(last + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = sum(exps)
            for j, e in enumerate(exps):
                out[idx][i] += e / total * v[idx][j]
    return out
