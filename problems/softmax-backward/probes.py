"""Probe inputs for diagnosing wrong answers, and the properties that point at a requirement.

Fault probes are real softmax outputs of logits with a spread of order one (neither one-hot nor
uniform: either would make weighted and unweighted sums agree), with at least three positions
along the axis (with two, several wrong centres coincide), on axes other than the last where the
axis length differs from the last one (so reducing over the wrong axis shows), in one, two and
three dimensions.
"""

import numpy as np

from app.problems.errormodel import Probe
from app.problems.helpers import close, softmax

# The property probes: one 3-D array softmaxed along its middle axis, and the slice along that
# axis at batch 0, column 0 ("the fibre"), which is all one upstream value may influence.
PROP_SHAPE = (2, 4, 3)
PROP_AXIS = 1
FIBRE = (0, slice(None), 0)


def _inputs(rng, shape, axis):
    return {
        "probabilities": softmax(1.5 * rng.standard_normal(shape), axis),
        "upstream": rng.standard_normal(shape),
        "axis": axis,
    }


def probes(rng):
    fault = [
        # name, shape, axis
        ("vector", (5,), -1),
        ("matrix-first", (4, 3), 0),
        ("matrix-last", (3, 5), -1),
        ("cube-middle", (2, 4, 3), 1),
        ("cube-first", (3, 2, 4), -3),
    ]
    out = [Probe(f"probe-{name}", _inputs(rng, shape, axis)) for name, shape, axis in fault]

    base = _inputs(rng, PROP_SHAPE, PROP_AXIS)
    one = base["upstream"].copy()
    one[0, 0, 0] += 1.0
    shifted = base["upstream"].copy()
    shifted[FIBRE] += 2.0
    out += [
        Probe("prop-base", base, purpose="property"),
        Probe("prop-one-changed", {**base, "upstream": one}, purpose="property"),
        Probe("prop-fibre-shifted", {**base, "upstream": shifted}, purpose="property"),
    ]
    return out


def _close(a, b):
    return close(a, b, scaled=False)


def implicated(outputs):
    """(requirement, evidence) for the first property the outputs break, in the order the
    computation builds on them (the slice, then the coupling, then the weights); silent where
    unsure."""
    got = {name: outputs.get(f"prop-{name}") for name in ("base", "one-changed", "fibre-shifted")}
    if any(v is None or v.shape != PROP_SHAPE or not np.all(np.isfinite(v)) for v in got.values()):
        return []
    base = got["base"]
    response = got["one-changed"] - base  # what raising upstream[0, 0, 0] by one did
    moved = ~np.isclose(got["one-changed"], base, rtol=1e-6, atol=1e-9)
    outside = moved.copy()
    outside[FIBRE] = False
    if outside.any():
        return [
            (
                "reduce-along-axis",
                f"Changing one upstream value changed gradients outside its slice along axis "
                f"{PROP_AXIS}: positions are coupled along another axis.",
            )
        ]
    if not moved[FIBRE][1:].any():
        return [
            (
                "couple-positions",
                "Changing one upstream value changed no other position's gradient along the "
                "axis: each logit's gradient uses only its own upstream value.",
            )
        ]
    evidence = []
    if response[0, 0, 0] < 0:
        evidence.append(
            "Raising one position's upstream value lowered its own logit's gradient; "
            "p_i (1 - p_i) is positive, so it must rise."
        )
    if not _close(base, got["fibre-shifted"]):
        evidence.append(
            "Adding the same number to every upstream value of one slice changed your output; "
            "the weighted sum shifts by exactly that number, so the gradient must not change."
        )
    sums = base.sum(axis=PROP_AXIS)
    if not _close(sums, np.zeros_like(sums)):
        evidence.append(
            f"Your gradient does not sum to zero along axis {PROP_AXIS}; "
            f"p_i (g_i - sum_j p_j g_j) always does."
        )
    return [("weight-by-probabilities", " ".join(evidence))] if evidence else []
