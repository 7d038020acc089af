"""Probe inputs for diagnosing wrong answers, and the properties that point at a requirement.

Fault probes keep every combination of faults apart: d_k != d_v and neither is 1 (else the two
scales coincide with each other or with none), n_q != n_k (a softmax over the wrong axis shows),
scores of order one (a saturated softmax hides the scale), and masks where every query keeps one
key and loses another (so the mask read either way is valid, and ignoring it shows). Two probes
block every key of one query: there the function must raise, and a function that does not shows
what it returns instead (NaN or uniform weights).
"""

import numpy as np

from app.problems.errormodel import Probe
from app.problems.helpers import close as _close
from app.problems.helpers import qkv

# The property probe's mask (True = blocked) and values are fixed, so the checks can read them.
PROP_MASK = np.array(
    [[False, True, False, True], [True, False, False, True], [False, True, True, False]]
)
PROP_V = np.random.default_rng(1502).standard_normal((2, 4, 3))


def _mixed_mask(rng, shape):
    """Every query keeps one key and blocks another, whichever way the mask is read."""
    mask = rng.random(shape) < 0.5
    rows = mask.reshape(-1, shape[-1])
    keep, block = rng.permutation(shape[-1])[:2]
    rows[:, keep], rows[:, block] = False, True
    return rows.reshape(shape)


def _inputs(rng, lead, n_q, n_k, d_k, d_v, mask_shape):
    return {
        **qkv(rng, lead, n_q, n_k, d_k, d_v),
        "mask": None if mask_shape is None else _mixed_mask(rng, mask_shape),
    }


def _rank(lead):
    """The mark of the inputs' rank ("2-d", "3-d", ...): code written for one rank only (a 2-D
    ``k.T``, a 3-D ``transpose(0, 2, 1)``) is explained on the probes of that rank."""
    return frozenset({f"{len(lead) + 2}-d"})


def probes(rng):
    fault = [
        # name, leading axes, n_q, n_k, d_k, d_v, mask shape, what sets it apart
        ("full-mask", (2,), 3, 5, 4, 2, (2, 3, 5), "a mask per batch"),
        ("heads", (2, 2), 4, 3, 6, 3, (2, 2, 4, 3), "a mask per head"),
        ("shared-mask", (), 5, 4, 9, 4, (5, 4), ""),
        ("padding", (3,), 3, 6, 4, 6, (3, 1, 6), "a key-padding mask"),
        ("unmasked", (2,), 4, 3, 4, 2, None, "no mask"),
        ("plain-2d", (), 3, 6, 4, 5, (3, 6), ""),
    ]
    out = [
        Probe(f"probe-{name}", _inputs(rng, *dims), marks=_rank(dims[0]), about=about)
        for name, *dims, about in fault
    ]
    # Every key of one query blocked: the function must raise.
    for name, row, dims in (
        ("empty-row", (1, 0), ((2,), 3, 4, 4, 2, (2, 3, 4))),
        ("empty-padded", 1, ((3,), 2, 5, 6, 3, (3, 2, 5))),
    ):
        inputs = _inputs(rng, *dims)
        inputs["mask"][row] = True
        out.append(
            Probe(
                f"probe-{name}",
                inputs,
                raises="ValueError",
                marks=_rank(dims[0]),
                about="a query with every key blocked",
            )
        )

    prop = {
        "q": rng.standard_normal((2, 3, 5)),
        "k": rng.standard_normal((2, 4, 5)),
        "v": PROP_V,
        "mask": PROP_MASK.copy(),
    }
    out.append(Probe("prop-masked", prop, purpose="property"))
    return out


def implicated(outputs):
    """(requirement, evidence) for each property the outputs break; silent where unsure."""
    result = outputs.get("prop-masked")
    if result is None:
        return []
    output, weights = result
    found = []
    if not np.all(np.isfinite(weights)):
        return found
    if np.any(weights[:, PROP_MASK] != 0):
        found.append(
            ("mask-before-softmax", "weights: a blocked key (mask True) has a nonzero weight.")
        )
    if not _close(weights.sum(axis=-1), np.ones(weights.shape[:-1])):
        found.append(("softmax-keys", "weights: some query's weights do not sum to one."))
    if np.all(np.isfinite(output)) and not _close(output, weights @ PROP_V):
        found.append(("weighted-sum", "output: it is not your own weights @ v."))
    return found
