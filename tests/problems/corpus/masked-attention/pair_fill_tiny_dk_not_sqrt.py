# expect: mask-fill-tiny, scale-dk-not-sqrt
# Both habits at once, written with loops over the flattened leading axes.
import numpy as np


def masked_attention(q, k, v, mask=None):
    lead = q.shape[:-2]
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]
    m = (
        np.zeros((*lead, n_q, n_k), bool)
        if mask is None
        else np.broadcast_to(mask, (*lead, n_q, n_k))
    )
    if m.all(axis=-1).any():
        raise ValueError("empty row")
    qs, ks, vs, ms = (a.reshape((-1, *a.shape[-2:])) for a in (q, k, v, m))
    outs, ws = [], []
    for b in range(qs.shape[0]):
        s = qs[b] @ ks[b].T / d_k
        s = np.where(ms[b], 1e-9, s)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w = w / w.sum(axis=1, keepdims=True)
        outs.append(w @ vs[b])
        ws.append(w)
    return np.stack(outs).reshape((*lead, n_q, -1)), np.stack(ws).reshape((*lead, n_q, n_k))
