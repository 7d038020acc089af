"""Probes of three ranks. Each mask keeps and blocks some key in every row and keeps some query
in every column, so that a softmax over the wrong axis is finite too."""

import numpy as np

from app.problems.errormodel import Probe


def _inputs(rng, lead, n_q, n_k, d):
    rows, cols = np.indices((n_q, n_k))
    mask = ((rows + cols) % 2 == 1) & (cols > 0)  # key 0 kept by all, the others alternate
    mask = np.broadcast_to(mask[:, rng.permutation(n_k)], (*lead, n_q, n_k)).copy()
    return {
        "q": rng.standard_normal((*lead, n_q, d)),
        "k": rng.standard_normal((*lead, n_k, d)),
        "mask": mask,
    }


def probes(rng):
    return [
        Probe("probe-2d", _inputs(rng, (), 3, 5, 4)),
        Probe("probe-3d", _inputs(rng, (2,), 4, 4, 3)),
        Probe("probe-4d", _inputs(rng, (2, 2), 3, 4, 5)),
    ]
