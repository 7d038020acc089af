"""Cases for masked attention: public examples (the statement's two-key example among them), seeded
hidden cases over several leading shapes and mask shapes, and cases that must raise."""

import numpy as np

from app.problems.cases import TestCase, broadcastable
from app.problems.helpers import qkv
from app.problems.hooks import CaseWarning


def check_case(inputs, dims):
    # A query with every key blocked is allowed here: the function must raise on it.
    mask = inputs.get("mask")
    if mask is not None:
        broadcastable("mask", mask.shape, (*dims["*lead"], dims["n_q"], dims["n_k"]))


def random_mask(rng, shape, blocked=0.4):
    """True (blocked) at random, but every query keeps at least one key."""
    mask = rng.random(shape) < blocked
    rows = mask.reshape(-1, shape[-1])
    rows[np.arange(rows.shape[0]), rng.integers(0, shape[-1], rows.shape[0])] = False
    return rows.reshape(shape)


def _case(name, rng, lead, n_q, n_k, d_k, d_v, mask_shape=None, visibility="hidden"):
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            **qkv(rng, lead, n_q, n_k, d_k, d_v),
            "mask": None if mask_shape is None else random_mask(rng, mask_shape),
        },
    )


def _must_raise(case, row):
    """``case`` with every key of mask row ``row`` blocked: the function must raise."""
    mask = case.inputs["mask"].copy()
    mask[row] = True
    return TestCase(case.name, {**case.inputs, "mask": mask}, case.visibility, raises="ValueError")


def first_key_only():
    """The statement's example: two keys with equal scores, only the first allowed."""
    return TestCase(
        "first-key-only",
        {
            "q": np.array([[1.0, 0.0]]),
            "k": np.array([[0.0, 1.0], [0.0, 2.0]]),
            "v": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
            "mask": np.array([[False, True]]),
        },
        visibility="public",
    )


def public_examples():
    rng = np.random.default_rng(15)
    return [
        first_key_only(),
        _case("heads-shared-mask", rng, (2, 2), 3, 4, 4, 2, (2, 1, 3, 4), visibility="public"),
        _case("no-mask", rng, (2,), 3, 3, 4, 3, visibility="public"),
        _must_raise(_case("blocked-row", rng, (), 3, 4, 4, 2, (3, 4), "public"), 1),
    ]


def hidden_cases(rng):
    shapes = [
        # name, leading axes, n_q, n_k, d_k, d_v, mask shape (None: no mask)
        ("plain-2d", (), 4, 5, 6, 3, (4, 5)),
        ("batch", (3,), 5, 4, 4, 6, (3, 5, 4)),
        ("heads", (2, 3), 4, 6, 8, 4, (2, 3, 4, 6)),
        ("key-padding", (2, 2), 3, 5, 6, 2, (2, 1, 1, 5)),
        ("one-row-for-all", (2,), 6, 4, 5, 3, (4,)),
        ("shared-square", (2, 2), 5, 5, 4, 7, (5, 5)),
        ("three-lead-axes", (2, 2, 2), 3, 4, 4, 2, (2, 1, 3, 4)),
        ("long-keys", (), 3, 9, 6, 4, (3, 9)),
        ("unmasked-heads", (2, 2), 4, 3, 6, 2, None),
    ]
    cases = [_case(name, rng, *shape) for name, *shape in shapes]
    cases.append(_must_raise(_case("empty-row", rng, (2,), 4, 5, 4, 3, (2, 4, 5)), (1, 2)))
    # A key-padding mask that pads out every key of the second sequence: all its queries empty.
    cases.append(_must_raise(_case("empty-sequence", rng, (2, 2), 3, 4, 6, 2, (2, 1, 1, 4)), 1))
    return cases


def case_warnings(inputs, dims):
    """Instructor cases that are valid but hide mistakes."""
    found = []
    mask = inputs.get("mask")
    if mask is not None and not mask.any():
        found.append(
            CaseWarning(
                code="mask-blocks-nothing",
                message="The mask blocks no key: every mask mistake goes unnoticed (use "
                "mask=None for the unmasked path).",
            )
        )
    if dims["d_k"] == dims["d_v"]:
        found.append(
            CaseWarning(
                code="equal-widths",
                message="d_k equals d_v: scaling by sqrt(d_v) instead of sqrt(d_k) goes unnoticed.",
                about=("d_k", "d_v"),
            )
        )
    return found
