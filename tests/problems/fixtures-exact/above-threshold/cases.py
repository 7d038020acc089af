"""Entries on both sides of the threshold, and some exactly on it (not above)."""

import numpy as np

from app.problems.cases import TestCase


def public_examples():
    x = np.array([[0.5, 1.0, 1.5], [2.0, -1.0, 1.0]])
    return [TestCase("on-the-threshold", {"x": x, "threshold": 1.0}, "public")]


def hidden_cases(rng):
    x = np.round(rng.standard_normal((4, 5)), 1)
    return [
        TestCase("rounded", {"x": x, "threshold": 0.2}),
        TestCase("all-below", {"x": x, "threshold": 9.0}),
    ]
