"""Rows of a few lengths, eps at its default, given, and large enough to matter."""

import numpy as np

from app.problems.cases import TestCase


def _case(name, rng, lead, d, visibility="hidden", **eps):
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            "x": rng.standard_normal((*lead, d)) * 2 + 1,
            "gamma": rng.standard_normal(d),
            "beta": rng.standard_normal(d),
            **eps,
        },
    )


def public_examples():
    rng = np.random.default_rng(7)
    return [
        _case("two-rows", rng, (2,), 3, "public", eps=0.001),
        _case("default-eps", rng, (3,), 4, "public"),
    ]


def hidden_cases(rng):
    return [
        _case("batched", rng, (2, 3), 5, eps=1e-5),
        _case("large-eps", rng, (4,), 3, eps=0.5),
        _case("one-row", rng, (), 6, eps=0.25),
    ]
