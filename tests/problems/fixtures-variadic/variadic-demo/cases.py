"""Cases of the variadic demo: no leading axes, a batch, a batch and heads; masks that
broadcast (fewer leading axes, a single row for every query)."""

import numpy as np

from app.problems.cases import InvalidCase, TestCase, broadcastable


def _mask(rng, shape):
    mask = rng.random(shape) < 0.4
    mask[..., 0] = False  # every query keeps its first key (the mask is True where blocked)
    return mask


def _case(name, rng, lead, n_q, n_k, d, mask_shape=None, visibility="hidden"):
    return TestCase(
        name=name,
        visibility=visibility,
        inputs={
            "q": rng.standard_normal((*lead, n_q, d)),
            "k": rng.standard_normal((*lead, n_k, d)),
            "mask": None if mask_shape is None else _mask(rng, mask_shape),
        },
    )


def public_examples():
    rng = np.random.default_rng(5)
    return [
        _case("plain-2d", rng, (), 2, 3, 4, visibility="public"),
        _case("batched-masked", rng, (2,), 3, 4, 4, mask_shape=(2, 3, 4), visibility="public"),
    ]


def hidden_cases(rng):
    return [
        _case("heads-shared-mask", rng, (2, 3), 3, 5, 4, mask_shape=(3, 5)),
        _case("heads-row-mask", rng, (2, 2), 4, 3, 3, mask_shape=(2, 1, 1, 3)),
        _case("one-batch", rng, (3,), 4, 4, 5, mask_shape=(3, 4, 4)),
        _case("unmasked-heads", rng, (2, 2), 2, 3, 4),
    ]


def check_case(inputs, dims):
    mask = inputs.get("mask")
    if mask is None:
        return
    scores = (*dims["*lead"], dims["n_q"], dims["n_k"])
    broadcastable("mask", mask.shape, scores)
    if np.broadcast_to(mask, scores).all(axis=-1).any():
        raise InvalidCase("mask", "blocks every key of some query")
